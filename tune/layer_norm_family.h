#pragma once
// The tuner's side of LayerNorm (tune/family_tuner.h): the row reduction (a workgroup per row
// through shared memory or subgroup adds, or a subgroup per row), the workgroup size and the
// reads; the forward and the backward each a class.
#include <string>
#include <vector>

#include "engine/ops/layer_norm_choice.h"
#include "tune/family_tuner.h"

namespace vkf::tune {

// Every candidate fits `info`, without duplicates, the default first (the prior: what an
// untuned run gets), then the rest nearest it first (its reduction, then workgroup sizes
// nearest its own).
std::vector<ops::LayerNormConfig> layer_norm_candidates(const DeviceInfo& info,
                                                        const ops::LayerNormProblem& p);
// The backward is timed with its dgamma/dbeta kernels (which the configuration does not change).
TunedLayerNorm tune_layer_norm(Device& dev, const ops::LayerNormProblem& p, Timer& timer,
                               const TunerOptions& options, Deadline deadline,
                               const StepReport& step = {});
// "" when the candidate computes right on `dev`, else what was wrong: the forward and the
// backward through the LayerNorm harness (reference/layer_norm_case.h) at the problem's row
// length and an odd one (no workgroup divides it), outputs poisoned, the tests' tolerances.
std::string check_layer_norm(Device& dev, const ops::LayerNormConfig& candidate,
                             const ops::LayerNormProblem& p, const Sabotage& sabotage = {});

template <>
struct FamilyTuner<ops::LayerNormFamily> {
  static auto candidates(const DeviceInfo& info, const ops::LayerNormProblem& p) {
    return layer_norm_candidates(info, p);
  }
  static TunedLayerNorm tune(Device& dev, const ops::LayerNormProblem& p, Timer& timer,
                             const TunerOptions& o, Deadline deadline, const StepReport& step) {
    return tune_layer_norm(dev, p, timer, o, deadline, step);
  }
  static std::string check(Device& dev, const ops::LayerNormConfig& c,
                           const ops::LayerNormProblem& p, const Sabotage& sabotage) {
    return check_layer_norm(dev, ops::LayerNormFamily::as_run(c), p, sabotage);
  }
};

}  // namespace vkf::tune
