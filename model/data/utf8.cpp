#include "model/data/utf8.h"

namespace vkf::model {

size_t decode_utf8_at(std::string_view text, size_t pos, char32_t& cp) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  // The second byte's allowed range depends on the lead byte (Unicode Table 3-7): that is where
  // overlongs, surrogates and values past U+10FFFF are excluded.
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // overlong below U+10000
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // stray continuation byte, C0/C1 overlong lead, or F5..FF
  }
  if (pos + len > text.size()) return 0;
  for (size_t i = 1; i < len; ++i) {
    const unsigned char b = byte(pos + i);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  return len;
}

size_t find_invalid_utf8(std::string_view text) {
  char32_t cp = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = decode_utf8_at(text, pos, cp);
    if (len == 0) return pos;
    pos += len;
  }
  return std::string_view::npos;
}

}  // namespace vkf::model
