#pragma once
// Workgroup-count arithmetic shared by the op wrappers.
#include <algorithm>
#include <array>
#include <cstdint>

#include "engine/error.h"

namespace vkf {

inline uint32_t ceil_div(uint64_t a, uint64_t b) {
  return static_cast<uint32_t>((a + b - 1) / b);
}

// Groups for a 1-D kernel of `n` items and `local` threads a group, folded over x and y when
// n/local exceeds 65535 (matches global_index_1d() in shaders/common/index.glsl).
inline std::array<uint32_t, 3> groups_1d(uint64_t n, uint32_t local) {
  uint64_t groups = std::max<uint64_t>(1, (n + local - 1) / local);
  if (groups <= 65535) return {static_cast<uint32_t>(groups), 1, 1};
  uint64_t y = (groups + 65534) / 65535;
  if (y > 65535) throw Error("1-D dispatch of " + std::to_string(n) + " items is too large");
  return {65535, static_cast<uint32_t>(y), 1};
}

}  // namespace vkf
