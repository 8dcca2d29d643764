// Strict UTF-8 decoding (RFC 3629 table 3-7) and Python's notion of whitespace.
#include "model/eval/utf8.h"

#include "engine/error.h"
#include "model/data/utf8.h"

namespace vkf::model::eval {
namespace {

// Length of the whitespace code point at text[pos], 0 when there is none.
size_t space_at(std::string_view text, size_t pos) {
  char32_t cp = 0;
  const size_t len = decode_utf8_at(text, pos, cp);
  return len > 0 && is_python_space(cp) ? len : 0;
}

}  // namespace

std::u32string decode_utf8(std::string_view text, std::string_view what) {
  std::u32string out;
  out.reserve(text.size());
  char32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = decode_utf8_at(text, pos, cp);
    if (len == 0) throw Error(std::string(what) + ": invalid UTF-8 at byte " + std::to_string(pos));
    out.push_back(cp);
    pos += len;
  }
  return out;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::vector<std::string_view> split_python_whitespace(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t start = std::string_view::npos;
  for (size_t pos = 0; pos < text.size();) {
    const size_t space = space_at(text, pos);
    if (space > 0) {
      if (start != std::string_view::npos) fields.push_back(text.substr(start, pos - start));
      start = std::string_view::npos;
      pos += space;
    } else {
      if (start == std::string_view::npos) start = pos;
      ++pos;  // a continuation byte is never the start of a whitespace code point
    }
  }
  if (start != std::string_view::npos) fields.push_back(text.substr(start));
  return fields;
}

std::string_view rstrip_python_whitespace(std::string_view text) {
  size_t end = 0;  // one past the last non-space code point
  for (size_t pos = 0; pos < text.size();) {
    const size_t space = space_at(text, pos);
    if (space > 0) {
      pos += space;
    } else {
      end = ++pos;  // continuation bytes are never whitespace, so they land here too
    }
  }
  return text.substr(0, end);
}

}  // namespace vkf::model::eval
