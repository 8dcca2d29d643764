#include "reference/loss.h"

#include <algorithm>
#include <cmath>

namespace vkf::ref {

namespace {
double log_sum_exp(const double* x, uint32_t n) {
  double m = *std::max_element(x, x + n);
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  return m + std::log(s);
}
}  // namespace

double cross_entropy_row_loss(const std::vector<double>& logits, int32_t target, double eps) {
  uint32_t vocab = static_cast<uint32_t>(logits.size());
  double lse = log_sum_exp(logits.data(), vocab);
  double sum_logp = 0;
  for (double x : logits) sum_logp += x - lse;
  return -(1 - eps) * (logits[target] - lse) - eps / vocab * sum_logp;
}

CrossEntropyResult cross_entropy(const std::vector<float>& logits,
                                 const std::vector<int32_t>& targets, uint32_t rows, uint32_t vocab,
                                 int32_t pad_id, double eps, double grad_scale) {
  CrossEntropyResult r;
  r.row_loss.assign(rows, 0.0);
  r.row_logp.assign(rows, 0.0);
  r.dlogits.assign(size_t{rows} * vocab, 0.0);
  std::vector<double> x(vocab);
  for (uint32_t row = 0; row < rows; ++row) {
    int32_t t = targets[row];
    if (t == pad_id || t < 0 || uint32_t(t) >= vocab) continue;
    for (uint32_t v = 0; v < vocab; ++v) x[v] = logits[size_t{row} * vocab + v];
    double lse = log_sum_exp(x.data(), vocab);
    r.row_loss[row] = cross_entropy_row_loss(x, t, eps);
    r.row_logp[row] = x[t] - lse;
    for (uint32_t v = 0; v < vocab; ++v) {
      double target_mass = eps / vocab + (v == uint32_t(t) ? 1 - eps : 0.0);
      r.dlogits[size_t{row} * vocab + v] = (std::exp(x[v] - lse) - target_mass) * grad_scale;
    }
    r.loss_sum += r.row_loss[row];
    r.logp_sum += r.row_logp[row];
    ++r.tokens;
  }
  return r;
}

std::vector<double> log_softmax(const std::vector<float>& x, uint32_t rows, uint32_t cols) {
  std::vector<double> y(size_t{rows} * cols);
  std::vector<double> row(cols);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) row[c] = x[size_t{r} * cols + c];
    double lse = log_sum_exp(row.data(), cols);
    for (uint32_t c = 0; c < cols; ++c) y[size_t{r} * cols + c] = row[c] - lse;
  }
  return y;
}

std::vector<double> row_log_sum_exp(const std::vector<float>& x, uint32_t rows, uint32_t cols) {
  std::vector<double> lse(rows);
  std::vector<double> row(cols);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) row[c] = x[size_t{r} * cols + c];
    lse[r] = log_sum_exp(row.data(), cols);
  }
  return lse;
}

}  // namespace vkf::ref
