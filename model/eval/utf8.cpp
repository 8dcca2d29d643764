// Strict UTF-8 decoding (RFC 3629 table 3-7) and Python's notion of whitespace.
#include "model/eval/utf8.h"

#include "engine/error.h"

namespace vkf::model::eval {
namespace {

// Decodes the code point starting at text[pos]; returns its length in bytes, 0 when malformed.
size_t decode_one(std::string_view text, size_t pos, char32_t& cp) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t len = 0;
  // The second byte's range is narrowed for E0/ED/F0/F4 to exclude overlongs, surrogates and
  // code points above U+10FFFF, as in RFC 3629 (and Python's decoder).
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (pos + len > text.size()) return 0;
  for (size_t i = 1; i < len; ++i) {
    const unsigned char b = byte(pos + i);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return len;
}

// Length of the whitespace code point at text[pos], 0 when there is none.
size_t space_at(std::string_view text, size_t pos) {
  char32_t cp = 0;
  const size_t len = decode_one(text, pos, cp);
  return len > 0 && is_python_space(cp) ? len : 0;
}

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
  char32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = decode_one(text, pos, cp);
    if (len == 0) return pos;
    pos += len;
  }
  return std::string_view::npos;
}

std::u32string decode_utf8(std::string_view text, std::string_view what) {
  std::u32string out;
  out.reserve(text.size());
  char32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = decode_one(text, pos, cp);
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
