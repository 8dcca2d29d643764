#pragma once
// The matmul tuning table: tile sizes and workgroup size per device family, passed to
// shaders/matmul.comp (or, for coopmat rows, shaders/matmul_coopmat.comp) as specialization
// constants. Every row is tested on every device (tests force each one), so a row chosen for
// another vendor's GPU is known to be correct here too; coopmat rows are the exception, as they
// need VK_NV_cooperative_matrix: every device runs them through the emulated kernel (the same
// tiling with plain arithmetic), and only a device with the extension on tensor cores.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "engine/device_info.h"

namespace vkf::ops {

struct MatmulConfig {
  const char* name;     // "nvidia", "cpu_direct", ... (for tests, benches and errors)
  uint32_t workgroup;   // invocations: (bm / tm) * (bn / tn); coopmat: that many subgroups
  uint32_t bm, bn, bk;  // C tile of a workgroup [bm, bn]; k step staged in shared memory
  uint32_t tm, tn;      // register block of one invocation [tm, tn]; coopmat: of one subgroup
  bool shared;          // stage tiles in shared memory (false: read operands directly)
  // Tensor cores through VK_NV_cooperative_matrix (shaders/matmul_coopmat.comp): f16 storage
  // only, 16x16x16 fragments, so tm, tn and bk are multiples of 16. Such rows are only ever
  // forced (MatmulArgs::config), never chosen by choose_matmul_config.
  bool coopmat = false;

  uint32_t subgroups() const { return (bm / tm) * (bn / tn); }  // coopmat
  uint32_t shared_bytes() const {
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
const MatmulConfig& matmul_config(const std::string& name);  // throws on an unknown name
// Why `info` cannot run `config` (workgroup size, shared memory, subgroups, features), or ""
// when it can. `emulated_coopmat`: a coopmat row run by the emulated kernel (MatmulArgs::
// emulate_coopmat), which needs fp16 shared memory and 32-invocation virtual subgroups instead of
// VK_NV_cooperative_matrix.
std::string matmul_config_misfit(const MatmulConfig& config, const DeviceInfo& info,
                                 bool emulated_coopmat = false);
// Whether `info`'s limits admit `config`: matmul_config_misfit(config, info).empty().
bool matmul_config_fits(const MatmulConfig& config, const DeviceInfo& info);
// The row for this device: by vendor/type (and, on CPU devices, whether B is transposed), then
// the fallback if the limits refuse it.
const MatmulConfig& choose_matmul_config(const DeviceInfo& info, bool b_transposed = true);

}  // namespace vkf::ops
