#pragma once
// Host twin of shaders/common/philox.glsl: the same Philox 4x32-10 stream, for CPU references
// and tests. Keep the two identical.
#include <array>
#include <cstdint>

namespace vkf {

inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
  }
  return c;
}

inline float philox_uniform(uint32_t seed, uint32_t step, uint32_t tensor, uint32_t element) {
  auto r = philox4x32_10({element >> 2, tensor, step, 0u}, {seed, 0x5EEDu});
  return float(r[element & 3u] >> 8) * (1.0f / 16777216.0f);
}

inline float dropout_scale(float p, uint32_t seed, uint32_t step, uint32_t tensor,
                           uint32_t element) {
  if (p <= 0.0f) return 1.0f;
  return philox_uniform(seed, step, tensor, element) < p ? 0.0f : 1.0f / (1.0f - p);
}

}  // namespace vkf
