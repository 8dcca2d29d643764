#pragma once
// Standalone inverted dropout, y = x * mask / (1 - p), with the mask a pure function of
// (seed, step, tensor_id, element) from Philox (shaders/common/philox.glsl): the backward pass
// regenerates it, so no mask is stored. Kernel: shaders/dropout.comp.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::ops {

struct DropoutArgs {
  BufferRef x;     // [n] input (backward: dy)
  BufferRef y;     // [n] output (backward: dx); may not overlap x
  BufferRef step;  // StepScalars (seed, step); needed only when p > 0
  uint32_t n = 0;
  float p = 0.0f;          // drop probability, in [0, 1)
  uint32_t tensor_id = 0;  // the mask stream; the same in forward and backward
};

void dropout_forward(Device& dev, Recorder& rec, const DropoutArgs& a);
// dx = dy * mask / (1 - p) with the forward's mask: args as in the forward, x = dy, y = dx.
void dropout_backward(Device& dev, Recorder& rec, const DropoutArgs& a);

}  // namespace vkf::ops
