#include "model/data/utf8.h"

#include <cstdint>

namespace vkf::model {

bool is_valid_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const auto* end = p + text.size();
  auto is_continuation = [](uint8_t b) { return (b & 0xC0) == 0x80; };
  while (p < end) {
    uint8_t lead = *p;
    if (lead < 0x80) {
      ++p;
      continue;
    }
    // The second byte's allowed range depends on the lead byte (Unicode Table 3-7): that is
    // where overlongs, surrogates and values past U+10FFFF are excluded.
    int length;
    uint8_t lo = 0x80, hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) lo = 0xA0;  // overlong below U+0800
      if (lead == 0xED) hi = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) lo = 0x90;  // overlong below U+10000
      if (lead == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return false;  // stray continuation byte, C0/C1 overlong lead, or F5..FF
    }
    if (end - p < length) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i < length; ++i)
      if (!is_continuation(p[i])) return false;
    p += length;
  }
  return true;
}

}  // namespace vkf::model
