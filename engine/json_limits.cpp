#include "engine/json_limits.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "engine/error.h"

namespace vkf {
namespace {

using json = nlohmann::json;

// Appends the start of `v`'s JSON text to `out` until it holds more than `max` characters;
// containers are walked, not dumped, so a value of millions of elements costs a few of them.
void append_limited(const json& v, std::string& out, size_t max) {
  if (out.size() > max) return;
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= max; ++it) {
      if (!first) out += ',';
      first = false;
      out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace);
      out += ':';
      append_limited(it.value(), out, max);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= max; ++it) {
      if (!first) out += ',';
      first = false;
      append_limited(*it, out, max);
    }
    out += ']';
  } else if (v.is_string()) {
    // Only the start of a long string: dump() would copy all of it.
    const std::string& s = v.get_ref<const std::string&>();
    out += json(s.substr(0, max + 1)).dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

}  // namespace

std::string printable_excerpt(std::string_view text, size_t max) {
  std::string out;
  size_t used = 0;
  for (; used < text.size() && out.size() < max; ++used) {
    const auto c = static_cast<unsigned char>(text[used]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (used < text.size()) out += "... (" + std::to_string(text.size() - used) + " more bytes)";
  return out;
}

std::string json_excerpt(const json& value, size_t max) {
  std::string text;
  append_limited(value, text, max);
  return printable_excerpt(text, max);
}

int64_t json_whole(const json& v, const std::string& what, int64_t lo, int64_t hi) {
  // Only JSON integers: no vkf file writes 64.0, and a float compared with the bounds would
  // round 2^63 into range. nlohmann holds every non-negative integer as unsigned.
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi >= 0 && u <= uint64_t(hi) && int64_t(u) >= lo) return int64_t(u);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= lo && i <= hi) return i;
  }
  const std::string range =
      v.is_number_integer() ? " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" : "";
  throw Error(what + " must be a whole number" + range + ", got " + json_excerpt(v));
}

double json_finite(const json& v, const std::string& what, double lo, double hi) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw Error(what + " must be a finite number, got " + json_excerpt(v));
  const double d = v.get<double>();
  if (d < lo || d > hi)
    throw Error(what + " must be a number in [" + json(lo).dump() + ", " + json(hi).dump() +
                "], got " + json_excerpt(v));
  return d;
}

json parse_json(std::string_view text, const std::string& name, JsonLimits limits) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  bool too_deep = false;
  // The callback sees every container as it opens, with the number of containers around it,
  // before anything deeper is built; it ends the parse by throwing.
  struct TooDeep {};
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= limits.max_depth) {
      too_deep = true;
      throw TooDeep{};
    }
    if (!limits.reject_duplicate_keys) return true;
    if (event == E::object_start) {
      open_objects.emplace_back();
    } else if (event == E::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == E::key && !open_objects.empty() && parsed.is_string()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/true,
                    limits.allow_comments);
  } catch (const TooDeep&) {
  } catch (const json::exception& e) {
    // nlohmann's message quotes the token it read ("last read: '...'"), which may be long or
    // binary: at most a short printable excerpt of it.
    throw Error(name + " is not JSON: " + printable_excerpt(e.what(), 200));
  }
  if (too_deep)
    throw Error(name + " nests arrays or objects deeper than " + std::to_string(limits.max_depth) +
                " levels");
  if (!duplicate.empty()) throw Error(name + " names '" + printable_excerpt(duplicate) + "' twice");
  return j;
}

}  // namespace vkf
