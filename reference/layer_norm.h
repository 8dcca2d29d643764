#pragma once
// Double-precision CPU references for LayerNorm (optionally post-LN: h = x + mask * s) and for
// Philox dropout masks, shared by the LayerNorm, embedding and dropout tests.
#include <cstdint>
#include <vector>

namespace vkf::ref {

// mask[i] = dropout_scale(p, seed, step, tensor_id, i) for i < n (0 or 1/(1-p)), from the host
// twin of the shaders' Philox stream.
std::vector<double> dropout_mask(uint32_t n, float p, uint32_t seed, uint32_t step,
                                 uint32_t tensor_id);

std::vector<double> to_double(const std::vector<float>& v);

struct LayerNormForward {
  std::vector<double> y;     // [rows, d]
  std::vector<double> h;     // [rows, d] x + mask * s
  std::vector<double> mean;  // [rows]
  std::vector<double> rstd;  // [rows]
};

// x, s: [rows, d] (s empty: h = x); mask: [rows, d] (empty: ones); gamma, beta: [d].
LayerNormForward layer_norm_forward(const std::vector<double>& x, const std::vector<double>& s,
                                    const std::vector<double>& mask,
                                    const std::vector<double>& gamma,
                                    const std::vector<double>& beta, uint32_t rows, uint32_t d,
                                    double eps);

struct LayerNormGrads {
  std::vector<double> dx;      // [rows, d]
  std::vector<double> ds;      // [rows, d] (empty in plain mode)
  std::vector<double> dgamma;  // [d]
  std::vector<double> dbeta;   // [d]
};

// Analytic gradients of sum(dy * y) for the forward above.
LayerNormGrads layer_norm_backward(const std::vector<double>& dy, const std::vector<double>& x,
                                   const std::vector<double>& s, const std::vector<double>& mask,
                                   const std::vector<double>& gamma, uint32_t rows, uint32_t d,
                                   double eps);

}  // namespace vkf::ref
