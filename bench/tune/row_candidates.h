#pragma once
// The search spaces of the row kernels: LayerNorm (row reduction: a workgroup per row through
// shared memory or subgroup adds, or a subgroup per row; workgroup size) and cross-entropy
// (subgroup or shared-memory reductions; workgroup size).
#include <vector>

#include "engine/device_info.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"

namespace vkf::tune {

// Every candidate fits `info`, without duplicates, the default first (the prior: what an
// untuned run gets), then the rest nearest it first (its reduction, then workgroup sizes
// nearest its own).
std::vector<ops::LayerNormConfig> layer_norm_candidates(const DeviceInfo& info,
                                                        const ops::LayerNormProblem& p);
std::vector<ops::RowKernelConfig> cross_entropy_candidates(const DeviceInfo& info,
                                                           const ops::CrossEntropyProblem& p);

}  // namespace vkf::tune
