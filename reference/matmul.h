#pragma once
// Double-precision reference for ops::matmul, and the fp16 conversions its tests need.
#include <cstdint>
#include <vector>

namespace vkf::ref {

struct Gemm {
  uint32_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  uint32_t lda = 0, ldb = 0, ldc = 0;                 // row strides (elements)
  uint64_t stride_a = 0, stride_b = 0, stride_c = 0;  // batch strides (elements)
  double alpha = 1.0, beta = 0.0;
  int epilogue = 0;  // 0 none, 1 + bias[n], 2 relu(. + bias[n]), 3 + r[m, n] (C's layout)
};

struct GemmResult {
  std::vector<double> c;      // the whole C buffer after the op (untouched elements copied)
  std::vector<double> scale;  // per element: sum of |terms| (|alpha| sum |a||b| + |beta c| + ...)
};

// a, b, c, bias, r are whole buffers indexed as the kernel does (batch item z at z * stride).
GemmResult matmul(const Gemm& g, const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<float>& c, const std::vector<float>& bias,
                  const std::vector<float>& r);

// IEEE binary16, round to nearest even.
uint16_t to_half(float f);
float from_half(uint16_t h);
inline float round_half(float f) {
  return from_half(to_half(f));
}

}  // namespace vkf::ref
