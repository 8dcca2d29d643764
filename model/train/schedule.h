#pragma once
// The paper's learning-rate schedule (section 5.3). The device computes the same formula from the
// step number in the per-step scalars; this host copy is for logging, progress and tests.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace vkf::model {

struct Schedule {
  int d_model = 512;
  int warmup_steps = 4000;
  double factor = 1.0;  // multiplies the paper's rate (fairseq's --lr with inverse_sqrt differs)

  // lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), step counted from 1.
  double lr(uint64_t step) const {
    double s = double(std::max<uint64_t>(step, 1));
    return factor * std::pow(double(d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(double(warmup_steps), -1.5));
  }
};

}  // namespace vkf::model
