#pragma once
// Checks on a host kernel's SPIR-V (Device::add_shader) before it reaches the driver, which
// would otherwise fail in vkCreateComputePipelines or, with a mismatched layout, not at all.
#include <cstdint>
#include <span>
#include <string>

namespace vkf {

// Why `spirv` is no compute shader the engine can run ("" when it is): not SPIR-V (magic
// number, size), or no GLCompute entry point named "main".
std::string spirv_module_misfit(std::span<const uint32_t> spirv);

// Why `spirv`'s resources do not match a KernelSpec of `buffers` bindings, `texel_buffers` of
// them uniform texel buffers ("" when they do): a descriptor outside set 0 or beyond binding
// buffers - 1, a texel buffer where the spec has a storage buffer or the other way round, or a
// push-constant block when push_bytes is 0.
std::string spirv_layout_misfit(std::span<const uint32_t> spirv, uint32_t buffers,
                                uint32_t texel_buffers, uint32_t push_bytes);

}  // namespace vkf
