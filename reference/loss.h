#pragma once
// Double-precision references for the loss ops (engine/ops/loss.h).
#include <cstdint>
#include <vector>

namespace vkf::ref {

struct CrossEntropyResult {
  std::vector<double> row_loss;  // [rows]
  std::vector<double> row_logp;  // [rows]
  std::vector<double> dlogits;   // [rows, vocab], already times grad_scale
  double loss_sum = 0;
  double logp_sum = 0;
  uint32_t tokens = 0;
};

// Label smoothing spreads eps uniformly over all vocab entries (see shaders/cross_entropy.comp);
// rows whose target is pad_id or outside [0, vocab) are ignored.
CrossEntropyResult cross_entropy(const std::vector<float>& logits,
                                 const std::vector<int32_t>& targets, uint32_t rows, uint32_t vocab,
                                 int32_t pad_id, double eps, double grad_scale);

// The loss of one row, straight from the definition -(1-eps) log p_t - eps/V sum log p_v, for
// finite differences.
double cross_entropy_row_loss(const std::vector<double>& logits, int32_t target, double eps);

// [rows, cols] -> [rows, cols]
std::vector<double> log_softmax(const std::vector<float>& x, uint32_t rows, uint32_t cols);
// [rows, cols] -> [rows]: log sum_c exp(x[r, c])
std::vector<double> row_log_sum_exp(const std::vector<float>& x, uint32_t rows, uint32_t cols);

}  // namespace vkf::ref
