#pragma once
// Dynamic loss scaling for mixed-precision training (issue 15), as fairseq's and Apex's: the
// loss gradient is multiplied by `scale` so that small fp16 gradients do not flush to zero; the
// optimizer divides it out. A non-finite gradient (fp16 overflow) skips the step and halves the
// scale; `window` clean steps in a row double it. Part of the optimizer state (TrainState), so
// a resumed run continues with the scale an uninterrupted one would have.
#include <cstdint>

namespace vkf::model {

struct LossScale {
  // fairseq's --fp16-init-scale and Apex's growth interval.
  static constexpr float k_initial = 128.0f;
  static constexpr uint32_t k_window = 2000;
  // Below this a run overflows at any scale: it has diverged (fairseq's min_loss_scale).
  static constexpr float k_min = 1.0f / 16384.0f;
  static constexpr float k_max = 16777216.0f;  // 2^24, Apex's cap

  float scale = k_initial;
  uint32_t clean_steps = 0;  // finite steps since the scale last changed
  uint64_t skipped = 0;      // steps skipped for a non-finite gradient, over the whole run

  // After a step: finite or not. Returns false when the scale would fall below k_min.
  bool update(bool finite, uint32_t window = k_window) {
    if (!finite) {
      ++skipped;
      clean_steps = 0;
      scale *= 0.5f;
      return scale >= k_min;
    }
    if (++clean_steps >= window) {
      clean_steps = 0;
      if (scale < k_max) scale *= 2.0f;
    }
    return true;
  }
};

}  // namespace vkf::model
