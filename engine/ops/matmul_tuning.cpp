#include "engine/ops/matmul_tuning.h"

#include "engine/error.h"

namespace vkf::ops {
namespace {

// Rows: name, workgroup, bm, bn, bk, tm, tn, shared.
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
    {"cpu_direct16", 16, 32, 96, 1, 32, 6, false},
    {"cpu_direct16_nn", 16, 32, 128, 1, 32, 8, false},
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

bool matmul_config_fits(const MatmulConfig& c, const DeviceInfo& info) {
  // The direct (no shared memory) path shares A across one subgroup with subgroupShuffle.
  const bool subgroup_ok =
      c.shared || (info.subgroup_shuffle &&
                   (info.subgroup_size == c.workgroup ||
                    (info.subgroup_size_control && info.min_subgroup_size <= c.workgroup &&
                     c.workgroup <= info.max_subgroup_size)));
  return subgroup_ok && c.workgroup <= info.max_workgroup_invocations &&
         c.workgroup <= info.max_workgroup_size[0] && c.shared_bytes() <= info.shared_memory_bytes;
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
