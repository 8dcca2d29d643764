#pragma once
// Activation backward passes that no fused kernel covers.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::ops {

// dh[0..n) *= (h > 0), in place; h is the saved ReLU output.
void relu_backward(Device& dev, Recorder& rec, const BufferRef& h, const BufferRef& dh, uint32_t n);

}  // namespace vkf::ops
