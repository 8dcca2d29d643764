#pragma once
// DeviceInfo of devices this machine does not have, for the tests of choices that read only a
// device's limits and features (tuning-table rows, tuner candidates, misfits).
#include "engine/device_info.h"
#include "engine/vk_coopmat_khr.h"  // the KHR component types and scopes on older headers

namespace vkf::test {

// A lavapipe-like CPU device: 1024 invocations, 32 KiB of shared memory, subgroups of
// `subgroup` lanes with shuffles and arithmetic.
inline DeviceInfo fake_cpu_info(uint32_t subgroup) {
  DeviceInfo cpu;
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu.max_workgroup_invocations = 1024;
  cpu.max_workgroup_size = {1024, 1024, 64};
  cpu.shared_memory_bytes = 32768;
  cpu.subgroup_size = cpu.min_subgroup_size = cpu.max_subgroup_size = subgroup;
  cpu.subgroup_shuffle = true;
  cpu.subgroup_arithmetic = true;
  return cpu;
}

// An NVIDIA GPU with fp16 storage, the Vulkan memory model and VK_NV_cooperative_matrix's
// 16x16x16 fp16 shape; no KHR or coopmat2 cooperative matrices (the tests add those).
inline DeviceInfo fake_nvidia_info() {
  DeviceInfo nv;
  nv.vendor = Vendor::nvidia;
  nv.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  nv.max_workgroup_invocations = 1024;
  nv.max_workgroup_size = {1024, 1024, 64};
  nv.shared_memory_bytes = 49152;
  nv.subgroup_size = nv.min_subgroup_size = nv.max_subgroup_size = 32;
  nv.subgroup_shuffle = true;
  nv.storage16 = nv.fp16 = nv.vulkan_memory_model = true;
  nv.nv_coopmat = nv.nv_coopmat_f16_16x16x16 = true;
  return nv;
}

// `info` with VK_NV_cooperative_matrix2 as NVIDIA's driver lists it (every feature the coopmat2
// matmul needs, Vulkan 1.3): fp16 x fp16 + fp32 and + fp16 at workgroup scope for 128 and 256
// invocations, granularity 16, dimensions up to 256.
inline DeviceInfo with_fake_coopmat2(DeviceInfo info) {
  info.api_version = VK_API_VERSION_1_3;
  info.nv_coopmat2 = {.listed = true,
                      .workgroup_scope = true,
                      .flexible_dimensions = true,
                      .tensor_addressing = true,
                      .per_element_operations = true,
                      .max_workgroup_size = 256,
                      .max_dimension = 256,
                      .reserved_shared_memory = 0,
                      .flexible_shapes = {}};
  for (uint32_t acc : {VK_COMPONENT_TYPE_FLOAT32_KHR, VK_COMPONENT_TYPE_FLOAT16_KHR})
    for (uint32_t wg : {128u, 256u})
      info.nv_coopmat2.flexible_shapes.push_back(
          CoopmatShape{.m = 16,
                       .n = 16,
                       .k = 16,
                       .a_type = VK_COMPONENT_TYPE_FLOAT16_KHR,
                       .b_type = VK_COMPONENT_TYPE_FLOAT16_KHR,
                       .c_type = acc,
                       .result_type = acc,
                       .saturating = false,
                       .scope = VK_SCOPE_WORKGROUP_KHR,
                       .workgroup_invocations = wg});
  return info;
}

}  // namespace vkf::test
