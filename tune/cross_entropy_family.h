#pragma once
// The tuner's side of cross-entropy (tune/family_tuner.h): subgroup or shared-memory
// reductions, the workgroup size and the logits' reads, timed with the gradient as training
// runs it.
#include <string>
#include <vector>

#include "engine/ops/loss_choice.h"
#include "tune/family_tuner.h"

namespace vkf::tune {

// The default first, then a read-path flip, workgroup steps and a reduction flip.
std::vector<ops::RowKernelConfig> cross_entropy_candidates(const DeviceInfo& info,
                                                           const ops::CrossEntropyProblem& p);
TunedCrossEntropy tune_cross_entropy(Device& dev, const ops::CrossEntropyProblem& p, Timer& timer,
                                     const TunerOptions& options, Deadline deadline,
                                     const StepReport& step = {});
// "" when the candidate computes right on `dev`: the loss with its gradient through the
// cross-entropy harness (reference/cross_entropy_case.h), label smoothing, a gradient scale,
// padding rows and a target outside the vocabulary, a vocabulary no workgroup divides.
std::string check_cross_entropy(Device& dev, const ops::RowKernelConfig& candidate,
                                const ops::CrossEntropyProblem& p, const Sabotage& sabotage = {});

template <>
struct FamilyTuner<ops::CrossEntropyFamily> {
  static auto candidates(const DeviceInfo& info, const ops::CrossEntropyProblem& p) {
    return cross_entropy_candidates(info, p);
  }
  static TunedCrossEntropy tune(Device& dev, const ops::CrossEntropyProblem& p, Timer& timer,
                                const TunerOptions& o, Deadline deadline, const StepReport& step) {
    return tune_cross_entropy(dev, p, timer, o, deadline, step);
  }
  static std::string check(Device& dev, const ops::RowKernelConfig& c,
                           const ops::CrossEntropyProblem& p, const Sabotage& sabotage) {
    return check_cross_entropy(dev, c, p, sabotage);
  }
};

}  // namespace vkf::tune
