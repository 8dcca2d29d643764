#pragma once
// The tuner's correctness guards for the row kernels: a candidate LayerNorm configuration runs
// the forward and the backward, a cross-entropy one the loss with its gradient, a top-k one its
// selection, on small inputs of the problem's storage type (rows no workgroup divides, an odd
// row length), against the double-precision references. Outputs start poisoned. LayerNorm,
// cross-entropy and Adam run through the harnesses the shader tests use
// (reference/layer_norm_case.h, cross_entropy_case.h, adam_case.h), with the tests' tolerances.
#include <string>

#include "engine/device.h"
#include "engine/ops/adam.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/topk_choice.h"
#include "tune/matmul_check.h"

namespace vkf::tune {

// "" when the candidate computes right on `dev`; else what was wrong.
std::string check_layer_norm(Device& dev, const ops::LayerNormConfig& candidate,
                             const ops::LayerNormProblem& p, const Sabotage& sabotage = {});
std::string check_cross_entropy(Device& dev, const ops::RowKernelConfig& candidate,
                                const ops::CrossEntropyProblem& p, const Sabotage& sabotage = {});
// Top-k is exact: the values and indices must equal a stable sort's (ties to the lower index),
// on rows with many ties and -inf entries.
std::string check_topk(Device& dev, const ops::TopKConfig& candidate, const ops::TopKProblem& p,
                       const Sabotage& sabotage = {});
// Adam in a configuration: one clipped AdamW step of 1001 parameters (no workgroup or element
// count divides it) through the Adam harness (reference/adam_case.h).
std::string check_adam(Device& dev, const ops::AdamConfig& candidate,
                       const Sabotage& sabotage = {});

}  // namespace vkf::tune
