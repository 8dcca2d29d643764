#pragma once
// The one JSON parse for files vkf reads (checkpoint headers and configs, tuning files, model
// configs, bench results), with limits an untrusted file cannot get past: a nesting depth (a
// value nested 100,000 arrays deep once exhausted the stack where a message printed it), and
// messages that quote at most a short, printable excerpt of what was read.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vkf {

// Deeper than any file vkf writes (a tuning file nests 4 deep) by far.
constexpr int k_max_json_depth = 64;

struct JsonLimits {
  int max_depth = k_max_json_depth;
  // Two equal keys in one object: nlohmann::json keeps the last silently; a safetensors header
  // must not name one tensor twice.
  bool reject_duplicate_keys = false;
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

}  // namespace vkf
