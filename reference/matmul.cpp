#include "reference/matmul.h"

#include <cmath>
#include <cstring>

namespace vkf::ref {

GemmResult matmul(const Gemm& g, const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<float>& c, const std::vector<float>& bias,
                  const std::vector<float>& r) {
  GemmResult out{std::vector<double>(c.begin(), c.end()), std::vector<double>(c.size(), 0.0)};
  for (uint32_t z = 0; z < g.batch; ++z) {
    for (uint32_t i = 0; i < g.m; ++i) {
      for (uint32_t j = 0; j < g.n; ++j) {
        double sum = 0, mag = 0;
        for (uint32_t l = 0; l < g.k; ++l) {
          double av =
              a[z * g.stride_a + (g.trans_a ? uint64_t(l) * g.lda + i : uint64_t(i) * g.lda + l)];
          double bv =
              b[z * g.stride_b + (g.trans_b ? uint64_t(j) * g.ldb + l : uint64_t(l) * g.ldb + j)];
          sum += av * bv;
          mag += std::fabs(av * bv);
        }
        const uint64_t ci = z * g.stride_c + uint64_t(i) * g.ldc + j;
        double v = g.alpha * sum;
        mag = std::fabs(g.alpha) * mag;
        if (g.beta != 0.0) {
          v += g.beta * c[ci];
          mag += std::fabs(g.beta * c[ci]);
        }
        if (g.epilogue == 1 || g.epilogue == 2) {
          v += bias[j];
          mag += std::fabs(bias[j]);
        }
        if (g.epilogue == 2) v = std::max(v, 0.0);
        if (g.epilogue == 3) {
          v += r[ci];
          mag += std::fabs(r[ci]);
        }
        out.c[ci] = v;
        out.scale[ci] = mag;
      }
    }
  }
  return out;
}

uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                        // below the smallest normal half: subnormal
    if (abs < 0x33000000u) return sign;           // below half the smallest subnormal
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float from_half(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  } else {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace vkf::ref
