#pragma once
// What a shader's SPIR-V declares it binds, read from the module itself: the bindings a device's
// per-stage limits count. `vkf devices --profile` names the kernels a device's
// maxPerStageDescriptorStorageBuffers cannot bind before any of them is created (a kernel that
// does not fit is refused by name when it is created: engine/kernel.h, kernel_limits_misfit).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// Distinct (set, binding) pairs of storage buffers in `spirv` (variables of the StorageBuffer
// storage class, or Uniform blocks decorated BufferBlock); aliased views of one binding count
// once, as the descriptor set layout does.
uint32_t spirv_storage_buffers(std::span<const uint32_t> spirv);

struct WideKernel {
  std::string name;
  uint32_t storage_buffers = 0;
  // Its _texel twin ("<name>_texel", before any "_f16"), when one is built and fits: the engine
  // then takes the twin, which reads some inputs through texel views (LayerNorm's forward,
  // attention's backward). "" when the kernel is refused.
  std::string texel_twin;
};
// The built shaders that bind more than `limit` storage buffers, widest first.
std::vector<WideKernel> kernels_over_storage_limit(uint32_t limit);

}  // namespace vkf
