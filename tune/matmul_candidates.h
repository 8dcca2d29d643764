#pragma once
// The matmul search space, in the kernel's specialization constants and variants: workgroup
// (subgroup) size, C tile, per-invocation block, k step, shared-memory staging or direct reads,
// texel or storage-buffer reads, and the tensor-core rows where the device has them (with, around
// the coopmat2 rows, their tile, k block and workgroup size).
#include <vector>

#include "engine/device_info.h"
#include "engine/ops/matmul_choice.h"

namespace vkf::tune {

// Every candidate fits `info` (matmul_config_misfit) and can run `p` (coopmat rows for f16
// only, where the build has their kernel), without duplicates (MatmulConfig::same_kernel), in
// the order the search tries them: the static table's row for `p` first (the prior: what an
// untuned run gets), then the table's other rows and the generated configurations, nearest the
// prior first, so that a search cut short by its budget has tried the likeliest ones.
std::vector<ops::MatmulConfig> matmul_candidates(const DeviceInfo& info,
                                                 const ops::MatmulProblem& p);

}  // namespace vkf::tune
