#pragma once
// The one JSON parse for files vkf reads (checkpoint headers and configs, tuning files, model
// configs, bench results), with limits an untrusted file cannot get past: a nesting depth (a
// value nested 100,000 arrays deep once exhausted the stack where a message printed it), and
// messages that quote at most a short, printable excerpt of what was read.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>

namespace vkf {

// Deeper than any file vkf writes (a tuning file nests 4 deep) by far.
constexpr int k_max_json_depth = 64;

struct JsonLimits {
  int max_depth = k_max_json_depth;
  // Two equal keys in one object: nlohmann::json keeps the last silently; a safetensors header
  // must not name one tensor twice.
  bool reject_duplicate_keys = false;
  // Khronos profile files may hold // and /* */ comments; no file vkf writes does.
  bool allow_comments = false;
};

// Parses `text`; throws vkf::Error "<name> is not JSON: <reason>" with the reason made
// printable and short, or "<name> nests deeper than 64 levels".
nlohmann::json parse_json(std::string_view text, const std::string& name, JsonLimits limits = {});

// `text` as one short printable line: bytes outside printable ASCII as \xNN, at most `max`
// characters, then "..." and how many bytes were left out.
std::string printable_excerpt(std::string_view text, size_t max = 60);

// A JSON value for a message: its text, cut short like printable_excerpt, without ever
// serialising more of a large value than the excerpt shows.
std::string json_excerpt(const nlohmann::json& value, size_t max = 60);

// Numbers read strictly, for every reader of a file's JSON. nlohmann's get<uint32_t>() takes
// 64.5 as 64 and -1 as 4294967295, and 1e300 is undefined behaviour (a fuzzer found that one in a
// tuning file); get<float>() of 1e300 is undefined behaviour too.
// `v` as a whole number in [lo, hi]; else vkf::Error "<what> must be a whole number[ in [lo,
// hi]], got <excerpt>".
int64_t json_whole(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi);
// `v` as a finite number in [lo, hi]; else vkf::Error "<what> must be a finite number[ in ...]".
double json_finite(const nlohmann::json& v, const std::string& what, double lo, double hi);

// `v` as T: a whole number in T's range, or for a floating T a finite number T can hold.
template <typename T>
T json_number(const nlohmann::json& v, const std::string& what) {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_integral_v<T>) {
    constexpr int64_t hi = uint64_t(L::max()) > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(L::max());
    return T(json_whole(v, what, int64_t(L::min()), hi));
  } else {
    return T(json_finite(v, what, double(L::lowest()), double(L::max())));
  }
}

// obj[key] as T (json_number), with the key as what the message names; `fallback` where the
// key is absent.
template <typename T>
T json_field(const nlohmann::json& obj, const char* key) {
  return json_number<T>(obj.at(key), key);
}
template <typename T>
T json_field(const nlohmann::json& obj, const char* key, T fallback) {
  const auto it = obj.find(key);
  return it == obj.end() ? fallback : json_number<T>(*it, key);
}

}  // namespace vkf
