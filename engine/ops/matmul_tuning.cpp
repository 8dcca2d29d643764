#include "engine/ops/matmul_tuning.h"

#include "engine/error.h"

namespace vkf::ops {
namespace {

// Rows: name, workgroup, bm, bn, bk, tm, tn, shared[, coopmat].
constexpr MatmulConfig k_configs[] = {
    // NVIDIA (Turing..Hopper): 128x128 tiles, 8x8 per thread, 16 KiB of shared memory, 256
    // threads; enough independent FMAs per thread to hide latency at 2 blocks per SM.
    {"nvidia", 256, 128, 128, 16, 8, 8, true},
    // AMD RDNA/GCN: 256 threads (4 wave64 / 8 wave32), 128x64 tiles, 8x4 per thread, 12 KiB.
    {"amd", 256, 128, 64, 16, 8, 4, true},
    // Intel Xe / Gen: smaller register files, so 128 threads on 64x64 tiles, 8x4 per thread.
    {"intel", 128, 64, 64, 16, 8, 4, true},
    // CPU devices (lavapipe, SwiftShader): no shared-memory staging (there it is plain memory
    // behind per-lane address arithmetic, plus a barrier); one 8-wide subgroup per workgroup,
    // a 32 x 8 block per lane (A shuffled across the subgroup, see shaders/matmul.comp). 32x8
    // beat 16x8, 32x4, 32x16, 24x8 and 8x8 at 1024^3 on lavapipe (64x4 falls off a cliff).
    {"cpu_direct", 8, 32, 64, 1, 32, 8, false},
    // The same for 16-wide subgroups (lavapipe with LP_NATIVE_VECTOR_WIDTH=512 on AVX-512
    // CPUs): with B transposed (B read along k), 32 x 6 a lane beat 32 x 4, 32 x 8, 16 x 8,
    // 16 x 12 and 16 x 16 at 1024^3; with B not transposed (read in 4-column runs, which need
    // a block 4k wide), 32 x 8 beat 32 x 4 and 32 x 6 (0.37 of OpenBLAS against 0.32 and 0.29).
    // These sweeps read A and B through storage buffers; CPU devices now read them through
    // texel views (MatmulArgs::texel_views), where 32 x 8 with B transposed was no faster than
    // 32 x 6 within the noise of a loaded machine (bench/README.md).
    {"cpu_direct16", 16, 32, 96, 1, 32, 6, false},
    {"cpu_direct16_nn", 16, 32, 128, 1, 32, 8, false},
    // NVIDIA tensor cores (VK_NV_cooperative_matrix, f16 storage): 4 subgroups of 32 on a 64x64
    // tile, each a 32x32 block of 2x2 16x16 fragments, k staged 32 at a time (14 KiB of shared
    // memory). Not verified on NVIDIA hardware yet, so never chosen automatically: force it
    // (MatmulArgs::config, VKF_MATMUL_CONFIG=nvidia_coopmat in the benches) to try it.
    {"nvidia_coopmat", 128, 64, 64, 32, 32, 32, true, true},
    // The same on 128x128 tiles: 8 subgroups, each a 64x32 block of 4x2 fragments (28 KiB).
    // Twice the fragments per staged byte, for large GEMMs (the FFN, the vocabulary projection);
    // the benchmark on a GPU decides between the two.
    {"nvidia_coopmat_128", 256, 128, 128, 32, 64, 32, true, true},
    // Any conformant device: 64 threads and 2 KiB of shared memory are below every required
    // minimum (128 invocations, 16 KiB).
    {"fallback", 64, 32, 32, 8, 4, 4, true},
};

}  // namespace

std::span<const MatmulConfig> matmul_configs() {
  return k_configs;
}

const MatmulConfig& matmul_config(const std::string& name) {
  for (const MatmulConfig& c : k_configs)
    if (name == c.name) return c;
  std::string names;
  for (const MatmulConfig& c : k_configs) names += std::string(names.empty() ? "" : ", ") + c.name;
  throw Error("no matmul configuration named '" + name + "' (have: " + names + ")");
}

std::string matmul_config_misfit(const MatmulConfig& c, const DeviceInfo& info,
                                 bool emulated_coopmat) {
  const std::string wg = std::to_string(c.workgroup);
  if (c.coopmat && emulated_coopmat) {
    if (!info.storage16) return "no storageBuffer16BitAccess";
    if (!info.fp16) return "no shaderFloat16 (fp16 shared-memory tiles)";
    // shaders/common/coopmat_fragment.glsl: virtual subgroups of 32 invocations.
    if (c.subgroups() * 32 != c.workgroup)
      return "a workgroup of " + wg + " is not " + std::to_string(c.subgroups()) +
             " emulated subgroups of 32";
  } else if (c.coopmat) {
    if (!info.nv_coopmat_f16_16x16x16)
      return "no VK_NV_cooperative_matrix shape 16x16x16 with fp16 A, B and fp32 C, D at "
             "subgroup scope";
    if (!info.storage16) return "no storageBuffer16BitAccess";
    if (!info.fp16) return "no shaderFloat16 (fp16 fragments and shared-memory tiles)";
    if (!info.vulkan_memory_model) return "no vulkanMemoryModel";
    // The shader gives each subgroup one block of C: the workgroup must be exactly that many.
    if (info.subgroup_size * c.subgroups() != c.workgroup)
      return "a workgroup of " + wg + " is not " + std::to_string(c.subgroups()) +
             " subgroups of " + std::to_string(info.subgroup_size);
  } else if (!c.shared) {
    // The direct (no shared memory) path shares A across one subgroup with subgroupShuffle.
    if (!info.subgroup_shuffle) return "no subgroupShuffle in compute shaders";
    if (info.subgroup_size != c.workgroup &&
        !(info.subgroup_size_control && info.min_subgroup_size <= c.workgroup &&
          c.workgroup <= info.max_subgroup_size))
      return "needs subgroups of " + wg + " but has " + std::to_string(info.subgroup_size);
  }
  if (c.workgroup > info.max_workgroup_invocations || c.workgroup > info.max_workgroup_size[0])
    return "a workgroup of " + wg + " exceeds the limit of " +
           std::to_string(std::min(info.max_workgroup_invocations, info.max_workgroup_size[0]));
  if (c.shared_bytes() > info.shared_memory_bytes)
    return std::to_string(c.shared_bytes()) + " bytes of shared memory exceed the limit of " +
           std::to_string(info.shared_memory_bytes);
  return "";
}

bool matmul_config_fits(const MatmulConfig& c, const DeviceInfo& info) {
  return matmul_config_misfit(c, info).empty();
}

const MatmulConfig& choose_matmul_config(const DeviceInfo& info, bool b_transposed) {
  const char* name = "fallback";
  if (info.is_cpu())
    name = info.subgroup_size != 16 ? "cpu_direct"
           : b_transposed           ? "cpu_direct16"
                                    : "cpu_direct16_nn";
  else if (info.vendor == Vendor::nvidia)
    name = "nvidia";
  else if (info.vendor == Vendor::amd)
    name = "amd";
  else if (info.vendor == Vendor::intel)
    name = "intel";
  const MatmulConfig& c = matmul_config(name);
  return matmul_config_fits(c, info) ? c : k_configs[std::size(k_configs) - 1];
}

}  // namespace vkf::ops
