#include "reference/layer_norm.h"

#include <cmath>

#include "engine/philox.h"

namespace vkf::ref {

std::vector<double> dropout_mask(uint32_t n, float p, uint32_t seed, uint32_t step,
                                 uint32_t tensor_id) {
  std::vector<double> m(n);
  for (uint32_t i = 0; i < n; ++i) m[i] = vkf::dropout_scale(p, seed, step, tensor_id, i);
  return m;
}

std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

LayerNormForward layer_norm_forward(const std::vector<double>& x, const std::vector<double>& s,
                                    const std::vector<double>& mask,
                                    const std::vector<double>& gamma,
                                    const std::vector<double>& beta, uint32_t rows, uint32_t d,
                                    double eps) {
  LayerNormForward f;
  const size_t n = size_t{rows} * d;
  f.h = x;
  for (size_t i = 0; i < n && !s.empty(); ++i) f.h[i] += s[i] * (mask.empty() ? 1.0 : mask[i]);
  f.y.resize(n);
  f.mean.resize(rows);
  f.rstd.resize(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const double* h = &f.h[size_t{r} * d];
    double mean = 0, var = 0;
    for (uint32_t c = 0; c < d; ++c) mean += h[c];
    mean /= d;
    for (uint32_t c = 0; c < d; ++c) var += (h[c] - mean) * (h[c] - mean);
    double rstd = 1.0 / std::sqrt(var / d + eps);
    for (uint32_t c = 0; c < d; ++c)
      f.y[size_t{r} * d + c] = (h[c] - mean) * rstd * gamma[c] + beta[c];
    f.mean[r] = mean;
    f.rstd[r] = rstd;
  }
  return f;
}

LayerNormGrads layer_norm_backward(const std::vector<double>& dy, const std::vector<double>& x,
                                   const std::vector<double>& s, const std::vector<double>& mask,
                                   const std::vector<double>& gamma, uint32_t rows, uint32_t d,
                                   double eps) {
  std::vector<double> beta(d, 0.0);
  LayerNormForward f = layer_norm_forward(x, s, mask, gamma, beta, rows, d, eps);
  LayerNormGrads g;
  const size_t n = size_t{rows} * d;
  g.dx.resize(n);
  g.dgamma.assign(d, 0.0);
  g.dbeta.assign(d, 0.0);
  for (uint32_t r = 0; r < rows; ++r) {
    const size_t b = size_t{r} * d;
    double mg = 0, mgx = 0;
    for (uint32_t c = 0; c < d; ++c) {
      double xhat = (f.h[b + c] - f.mean[r]) * f.rstd[r];
      double gc = dy[b + c] * gamma[c];
      mg += gc;
      mgx += gc * xhat;
      g.dgamma[c] += dy[b + c] * xhat;
      g.dbeta[c] += dy[b + c];
    }
    mg /= d;
    mgx /= d;
    for (uint32_t c = 0; c < d; ++c) {
      double xhat = (f.h[b + c] - f.mean[r]) * f.rstd[r];
      g.dx[b + c] = f.rstd[r] * (dy[b + c] * gamma[c] - mg - xhat * mgx);
    }
  }
  if (!s.empty()) {
    g.ds.resize(n);
    for (size_t i = 0; i < n; ++i) g.ds[i] = g.dx[i] * (mask.empty() ? 1.0 : mask[i]);
  }
  return g;
}

}  // namespace vkf::ref
