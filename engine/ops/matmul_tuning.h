#pragma once
// The matmul tuning table: tile sizes and workgroup size per device family, passed to
// shaders/matmul.comp (or, for coopmat rows, shaders/matmul_coopmat.comp) as specialization
// constants. Every row is tested on every device (tests force each one), so a row chosen for
// another vendor's GPU is known to be correct here too; coopmat rows are the exception, as they
// need VK_NV_cooperative_matrix or VK_KHR_cooperative_matrix: every device runs them through the
// emulated kernels (the same tiling with plain arithmetic), and only a device with the extension
// on tensor cores (for KHR, Mesa 26's lavapipe too: the Debian 13 tier, scripts/test-debian13).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/device_info.h"
#include "engine/tensor.h"

namespace vkf::ops {

// The most slices split-k cuts k into (MatmulConfig::split_k, ops::matmul_split_k).
constexpr uint32_t k_matmul_max_split_k = 16;
// The most accumulators (tm x tn) an invocation of the plain kernel holds: the tuner's own bound
// (twice the largest table row's 32 x 8); a larger block spills, and compiles for minutes.
constexpr uint32_t k_matmul_max_block = 512;

// One kernel configuration, owned by value: a table row, or one the tuner made (tune/), which
// outlives no table. The kernel cache keys on the values (KernelSpec), never on the name.
struct MatmulConfig {
  std::string name;     // "nvidia", "cpu_direct", ... (for tests, benches and errors)
  uint32_t workgroup;   // invocations: (bm / tm) * (bn / tn); coopmat: that many subgroups
  uint32_t bm, bn, bk;  // C tile of a workgroup [bm, bn]; k step staged in shared memory
  uint32_t tm, tn;      // register block of one invocation [tm, tn]; coopmat: of one subgroup
  bool shared;          // stage tiles in shared memory (false: read operands directly)
  // Tensor cores (f16 storage only): through VK_NV_cooperative_matrix (shaders/
  // matmul_coopmat.comp, 16x16x16 fragments, so tm, tn and bk are multiples of 16; only ever
  // forced, MatmulArgs::config), or with `khr` through VK_KHR_cooperative_matrix (shaders/
  // matmul_coopmat_khr.comp, fragments of a shape the device lists that divides tm x tn x bk;
  // chosen for f16 matmuls where the device has one, see choose_matmul_config).
  bool coopmat = false;
  bool khr = false;
  // KHR rows: shared-memory buffers of staged tiles. 2: the next k-step is stored into the
  // other buffer while this one's are multiplied, one barrier a step instead of two, for twice
  // the tiles' shared memory.
  uint32_t stages = 1;
  // Texel-view reads of A and B (shaders/matmul.comp VKF_TEXEL) where they fit; nullopt: the
  // device's default (CPU devices). Table rows leave it unset; the tuner searches it.
  std::optional<bool> texel;
  // Tensor cores through VK_NV_cooperative_matrix2 (with coopmat; shaders/matmul_coopmat_nv2.comp):
  // the workgroup's `workgroup` invocations own one bm x bn accumulator and load bk-deep blocks
  // through tensor layouts, the driver staging them; tm, tn equal bm, bn (unused). In no table:
  // forced (MatmulArgs::config, VKF_MATMUL_CONFIG in the benches) or tuned.
  bool nv2 = false;
  // Split-k (ops::matmul with a workspace, MatmulArgs::workspace): nullopt follows the engine's
  // rule (matmul_split_k); 1 never splits; n > 1 cuts k into n slices where k and the workspace
  // allow (fewer where they do not). The tuner sets it where it timed the choice: the rule's
  // thresholds were set by hand on lavapipe, while the tuner measures the device in front of it.
  // Not a property of the kernel (same_kernel ignores it).
  std::optional<uint32_t> split_k;

  // The values, without the name: two configurations that build the same kernel are equal.
  bool same_kernel(const MatmulConfig& o) const {
    return workgroup == o.workgroup && bm == o.bm && bn == o.bn && bk == o.bk && tm == o.tm &&
           tn == o.tn && shared == o.shared && coopmat == o.coopmat && khr == o.khr &&
           stages == o.stages && texel == o.texel && nv2 == o.nv2;
  }
  // The shader a coopmat row runs (its emulated twin aside); nullptr for the others.
  const char* coopmat_kernel() const {
    return !coopmat ? nullptr
           : nv2    ? "matmul_coopmat_nv2"
           : khr    ? "matmul_coopmat_khr"
                    : "matmul_coopmat";
  }
  // "wg8 32x64x1 t32x8 direct texel": the values in one word, for the tuner's reports.
  std::string describe() const;

  uint32_t subgroups() const { return (bm / tm) * (bn / tn); }  // coopmat
  // Invocations per workgroup. KHR rows have `subgroups()` subgroups of whatever width the device
  // runs (`workgroup` is the count for 32-wide ones), or of 32 when their fragments are emulated.
  uint32_t invocations(const DeviceInfo& info, bool emulated = false) const {
    return khr ? subgroups() * (emulated ? 32 : info.subgroup_size) : workgroup;
  }
  // frag_m: the fragment height of a KHR row (its epilogue scratch is frag_m rows of each
  // subgroup's block).
  uint32_t shared_bytes(uint32_t frag_m = 16) const {
    if (nv2) return 0;  // the driver's staging, within the limit it reserves for itself
    if (khr) {
      // fp16 A and B tiles, rows padded by 8 halves, the larger of either orientation; the fp32
      // scratch aliases them (shaders/matmul_coopmat_khr.comp).
      auto tile = [this](uint32_t outer) {
        return 2 * std::max(outer * (bk + 8), bk * (outer + 8));
      };
      return std::max(stages * (tile(bm) + tile(bn)), subgroups() * frag_m * tn * 4);
    }
    if (coopmat) {
      // fp16 A and B tiles with 8 halves of padding per row, either orientation, and a 16x16
      // fp32 scratch per subgroup (see shaders/matmul_coopmat.comp).
      auto tile = [this](uint32_t outer) {
        return 2 * std::max(outer * (bk + 8), bk * (outer + 8));
      };
      return tile(bm) + tile(bn) + subgroups() * 16 * 16 * 4;
    }
    return shared ? (bm + bn) * bk * 4 : 0;
  }
};

// Every row of the table, the fallback last.
std::span<const MatmulConfig> matmul_configs();
const MatmulConfig& matmul_config(std::string_view name);  // throws on an unknown name
// Why `info` cannot run `config` (its tiling's consistency, workgroup size, shared memory,
// subgroups, features), or "" when it can. `emulated_coopmat`: a coopmat row run by the emulated
// kernel (MatmulArgs:: emulate_coopmat), which needs fp16 shared memory and 32-invocation virtual
// subgroups instead of the cooperative-matrix extension.
std::string matmul_config_misfit(const MatmulConfig& config, const DeviceInfo& info,
                                 bool emulated_coopmat = false);
// A driver known to crash (not fail: SIGSEGV, which no caller can recover from) when it compiles
// a KHR cooperative-matrix kernel (the matmul's, the tensor-core probe's), naming it; empty
// otherwise.
std::string known_khr_compiler_crash(const DeviceInfo& info);
// Whether `info`'s limits admit `config`: matmul_config_misfit(config, info).empty().
bool matmul_config_fits(const MatmulConfig& config, const DeviceInfo& info);
// The fragment shape a KHR row runs on `info`: of the listed fp16 x fp16 + fp32 subgroup shapes
// whose M, N and K divide tm, tn and bk (and are multiples of 8: tiles are staged in runs of 8
// halves), the one with the most products per instruction; nullptr when none fits.
const CoopmatShape* khr_coopmat_shape(const MatmulConfig& config, const DeviceInfo& info);
// The table's row for this device, and why it is that row (one line, for `vkf bench` and the
// tests: "CPU device, subgroups of 16, B transposed"). See choose_matmul_config.
struct TableChoice {
  const MatmulConfig* config;
  std::string why;
};
TableChoice table_matmul_config(const DeviceInfo& info, bool b_transposed = true,
                                DType dtype = DType::f32, uint32_t m = 0, uint32_t n = 0);
// The row for this device: for f16 storage on a GPU whose VK_KHR_cooperative_matrix lists a
// fitting shape (and a build that has the KHR kernel), a KHR tensor-core row (128x128 tiles
// where m x n fills at least 128 of them, else 64x64); otherwise by vendor/type (and, on CPU
// devices, whether B is transposed), then the fallback if the limits refuse it.
const MatmulConfig& choose_matmul_config(const DeviceInfo& info, bool b_transposed = true,
                                         DType dtype = DType::f32, uint32_t m = 0, uint32_t n = 0);

}  // namespace vkf::ops
