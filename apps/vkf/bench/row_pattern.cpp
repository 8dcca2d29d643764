#include "apps/vkf/bench/row_pattern.h"

#include <re2/re2.h>

#include <memory>

#include "engine/error.h"

namespace vkf::bench {
namespace {

std::unique_ptr<RE2> compile(const std::string& pattern) {
  RE2::Options o;
  o.set_log_errors(false);  // the error is ours to report, in one line
  return std::make_unique<RE2>(pattern, o);
}

// A short excerpt of a pattern for a message: a refused pattern may be megabytes.
std::string excerpt(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 60)) out += (c >= 32 && c < 127) ? c : '?';
  return s.size() > 60 ? out + "..." : out;
}

}  // namespace

void check_row_pattern(const std::string& pattern, const std::string& flag) {
  if (pattern.size() > k_max_row_pattern)
    throw Error(flag + " '" + excerpt(pattern) + "' is " + std::to_string(pattern.size()) +
                " bytes long: at most " + std::to_string(k_max_row_pattern));
  const auto re = compile(pattern);
  if (!re->ok())
    throw Error(flag + " '" + excerpt(pattern) +
                "' is not a regular expression (RE2 syntax): " + re->error());
}

bool row_pattern_search(const std::string& pattern, const std::string& id) {
  if (pattern.empty() || pattern.size() > k_max_row_pattern) return false;
  const auto re = compile(pattern);
  return re->ok() && RE2::PartialMatch(id, *re);
}

}  // namespace vkf::bench
