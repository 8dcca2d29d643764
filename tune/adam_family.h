#pragma once
// The tuner's side of Adam (tune/family_tuner.h): the workgroup size, the elements an
// invocation and the reads, timed over the problem's parameter count up to 16M (far beyond any
// cache: a larger count only takes longer to time).
#include <algorithm>
#include <string>
#include <vector>

#include "engine/ops/adam.h"
#include "tune/family_tuner.h"

namespace vkf::tune {

// The parameters Adam is timed over.
inline uint32_t adam_tuned_count(const ops::AdamProblem& p) {
  return std::min(p.n, 16u << 20);
}
// The default (the device type's prior), then its texel or storage twin, then workgroup sizes
// and elements an invocation nearest it. `tuned_n`: the parameters the tuner times (texel reads
// only where a view of them fits the device).
std::vector<ops::AdamConfig> adam_candidates(const DeviceInfo& info, uint32_t tuned_n);
TunedAdam tune_adam(Device& dev, const ops::AdamProblem& p, Timer& timer,
                    const TunerOptions& options, Deadline deadline, const StepReport& step = {});
// One clipped AdamW step of 1001 parameters (no workgroup or element count divides it) through
// the Adam harness (reference/adam_case.h).
std::string check_adam(Device& dev, const ops::AdamConfig& candidate,
                       const Sabotage& sabotage = {});

template <>
struct FamilyTuner<ops::AdamFamily> {
  static auto candidates(const DeviceInfo& info, const ops::AdamProblem& p) {
    return adam_candidates(info, adam_tuned_count(p));
  }
  static TunedAdam tune(Device& dev, const ops::AdamProblem& p, Timer& timer, const TunerOptions& o,
                        Deadline deadline, const StepReport& step) {
    return tune_adam(dev, p, timer, o, deadline, step);
  }
  static std::string check(Device& dev, const ops::AdamConfig& c, const ops::AdamProblem&,
                           const Sabotage& sabotage) {
    return check_adam(dev, c, sabotage);
  }
};

}  // namespace vkf::tune
