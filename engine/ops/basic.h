#pragma once
// The smallest ops: fill and axpy. They exercise the recorder and serve as the model for the
// op wrappers (shape checks here, the kernel in shaders/<name>.comp).
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::ops {

constexpr uint32_t k_local_1d = 256;

// y[0..n) = value
void fill(Device& dev, Recorder& rec, const BufferRef& y, uint32_t n, float value);
// y[0..n) += scalars[alpha_index] * x[0..n)
void axpy(Device& dev, Recorder& rec, const BufferRef& x, const BufferRef& y,
          const BufferRef& scalars, uint32_t alpha_index, uint32_t n);

}  // namespace vkf::ops
