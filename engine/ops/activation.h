#pragma once
// Activation backward passes that no fused kernel covers.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

// dh[0..n) *= (h > 0), in place; h is the saved ReLU output. dtype: storage of h and dh, f32 or
// f16 (devices with 16-bit storage).
void relu_backward(Device& dev, Recorder& rec, const BufferRef& h, const BufferRef& dh, uint32_t n,
                   DType dtype = DType::f32);

}  // namespace vkf::ops
