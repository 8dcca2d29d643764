#pragma once
// Shape check shared by the corpus metrics: one hypothesis per line of every reference stream.
#include <string>
#include <string_view>
#include <vector>

namespace vkf::model::eval {

// Throws vkf::Error when there is no reference stream or a stream's line count differs from the
// hypotheses'; the message names the metric and both counts.
void check_parallel(std::string_view metric, const std::vector<std::string>& hypotheses,
                    const std::vector<std::vector<std::string>>& references);

}  // namespace vkf::model::eval
