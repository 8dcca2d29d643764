#pragma once
// The matmul tuning table: tile sizes and workgroup size per device family, passed to
// shaders/matmul.comp as specialization constants. Every row is tested on every device (tests
// force each one), so a row chosen for another vendor's GPU is known to be correct here too.
#include <cstdint>
#include <span>
#include <string>

#include "engine/device_info.h"

namespace vkf::ops {

struct MatmulConfig {
  const char* name;     // "nvidia", "cpu_direct", ... (for tests, benches and errors)
  uint32_t workgroup;   // invocations: (bm / tm) * (bn / tn)
  uint32_t bm, bn, bk;  // C tile of a workgroup [bm, bn]; k step staged in shared memory
  uint32_t tm, tn;      // register block of one invocation [tm, tn]
  bool shared;          // stage tiles in shared memory (false: read operands directly)

  uint32_t shared_bytes() const { return shared ? (bm + bn) * bk * 4 : 0; }
};

// Every row of the table, the fallback last.
std::span<const MatmulConfig> matmul_configs();
const MatmulConfig& matmul_config(const std::string& name);  // throws on an unknown name
// Whether `info`'s limits admit `config` (workgroup size, shared memory).
bool matmul_config_fits(const MatmulConfig& config, const DeviceInfo& info);
// The row for this device: by vendor/type (and, on CPU devices, whether B is transposed), then
// the fallback if the limits refuse it.
const MatmulConfig& choose_matmul_config(const DeviceInfo& info, bool b_transposed = true);

}  // namespace vkf::ops
