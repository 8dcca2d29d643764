#pragma once
// DeviceInfo of devices this machine does not have, for the tests of choices that read only a
// device's limits and features (tuning-table rows, tuner candidates, misfits).
#include "engine/device_info.h"

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

}  // namespace vkf::test
