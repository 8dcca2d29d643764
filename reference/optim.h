#pragma once
// Double-precision references for the optimizer ops (engine/ops/adam.h).
#include <cstdint>
#include <vector>

#include "engine/ops/adam.h"

namespace vkf::ref {

// The learning rate adam.comp uses at `step` (1-based; 0 acts as 1).
double adam_learning_rate(const ops::AdamOptions& o, uint32_t step, double lr_scale);

struct AdamState {
  std::vector<double> w, m, v;  // [n]
};

// sqrt(sum of g^2) over all buffers, in double.
double grad_norm(const std::vector<std::vector<float>>& grads);

// One Adam/AdamW update with the same definition as shaders/adam.comp; `norm` is the raw
// gradient's global norm (used for clipping). Returns false (state untouched) when the
// gradient is not finite and o.skip_nonfinite is set.
bool adam_step(AdamState& s, const std::vector<float>& grad, const ops::AdamOptions& o,
               uint32_t step, double grad_scale, double lr_scale, double norm);

}  // namespace vkf::ref
