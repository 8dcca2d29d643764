#include "model/eval/parallel.h"

#include "engine/error.h"

namespace vkf::model::eval {

void check_parallel(std::string_view metric, const std::vector<std::string>& hypotheses,
                    const std::vector<std::vector<std::string>>& references) {
  if (references.empty()) throw Error(std::string(metric) + ": no reference given");
  for (size_t k = 0; k < references.size(); ++k) {
    if (references[k].size() != hypotheses.size())
      throw Error(std::string(metric) + ": " + std::to_string(hypotheses.size()) +
                  " hypothesis lines but reference " + std::to_string(k + 1) + " has " +
                  std::to_string(references[k].size()) + " lines");
  }
}

}  // namespace vkf::model::eval
