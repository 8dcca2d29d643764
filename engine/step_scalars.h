#pragma once
// Per-step scalars: a small host-visible buffer that recorded sequences read, written by the host
// before each submit, so a training or decoding step is recorded once and replayed. The layout
// is shared with shaders/common/step.glsl.
#include <cstdint>

namespace vkf {

struct StepScalars {
  uint32_t step = 1;        // optimizer step, 1-based (learning-rate schedule, Adam bias terms)
  uint32_t seed = 0;        // dropout seed
  float grad_scale = 1.0f;  // gradients are multiplied by this before the update (1/tokens,
                            // loss scaling, averaging across devices)
  float lr_scale = 1.0f;    // multiplies the scheduled learning rate
  // The batch row (sentence) this batch starts at within the whole batch of the step: dropout
  // masks are drawn as for that position, so data-parallel replicas, each running its share of
  // the rows, drop exactly what one device with the whole batch would.
  uint32_t dropout_row = 0;
  uint32_t pad[3] = {};  // to 32 bytes, a multiple of 16 as uniform and storage layouts like
};
static_assert(sizeof(StepScalars) == 32);

}  // namespace vkf
