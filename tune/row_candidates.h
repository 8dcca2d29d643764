#pragma once
// The search spaces of the row kernels: LayerNorm (row reduction: a workgroup per row through
// shared memory or subgroup adds, or a subgroup per row; workgroup size) and cross-entropy
// (subgroup or shared-memory reductions; workgroup size), and top-k (path; workgroup size and
// entries a lane).
#include <vector>

#include "engine/device_info.h"
#include "engine/ops/adam.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/topk_choice.h"

namespace vkf::tune {

// Every candidate fits `info`, without duplicates, the default first (the prior: what an
// untuned run gets), then the rest nearest it first (its reduction, then workgroup sizes
// nearest its own).
std::vector<ops::LayerNormConfig> layer_norm_candidates(const DeviceInfo& info,
                                                        const ops::LayerNormProblem& p);
std::vector<ops::RowKernelConfig> cross_entropy_candidates(const DeviceInfo& info,
                                                           const ops::CrossEntropyProblem& p);
// Top-k: the default (chunks), then a subgroup per row (the other path, tried first), then
// chunk shapes nearest the default.
std::vector<ops::TopKConfig> topk_candidates(const DeviceInfo& info, const ops::TopKProblem& p);
// Adam: the default (the device type's prior), then its texel or storage twin, then workgroup
// sizes and elements an invocation nearest it. `tuned_n`: the parameters the tuner times (texel
// reads only where a view of them fits the device).
std::vector<ops::AdamConfig> adam_candidates(const DeviceInfo& info, uint32_t tuned_n);

}  // namespace vkf::tune
