#pragma once
// The patterns `vkf bench --rows` and --wrong-kernel select rows with: RE2 syntax, searched in
// the row ids. RE2 matches in time linear in the id whatever the pattern ('(.*)*$x' included),
// and its parser bounds nesting; patterns are bounded in length too, so that a hostile one is
// refused at once instead of hanging the run or overflowing the stack.
#include <string>

namespace vkf::bench {

constexpr size_t k_max_row_pattern = 1000;  // bytes; row ids are a few dozen

// Throws vkf::Error naming `flag` when `pattern` is too long or not a valid RE2 pattern.
void check_row_pattern(const std::string& pattern, const std::string& flag);
// Whether `pattern` (checked) occurs in `id`; "" matches nothing.
bool row_pattern_search(const std::string& pattern, const std::string& id);

}  // namespace vkf::bench
