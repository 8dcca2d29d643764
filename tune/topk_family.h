#pragma once
// The tuner's side of top-k, the beam search's selection (tune/family_tuner.h): the path (a
// subgroup per row, or chunks), the workgroup size and the entries a lane, timed at the
// decoder's shape (rows = beam x sentences, n = the vocabulary, k = 2 x beam) with the
// log-softmax as decoding runs it.
#include <string>
#include <vector>

#include "engine/ops/topk_choice.h"
#include "tune/family_tuner.h"

namespace vkf::tune {

// The default (chunks), then a subgroup per row (the other path, tried first), then chunk
// shapes nearest the default.
std::vector<ops::TopKConfig> topk_candidates(const DeviceInfo& info, const ops::TopKProblem& p);
TunedTopK tune_topk(Device& dev, const ops::TopKProblem& p, Timer& timer,
                    const TunerOptions& options, Deadline deadline, const StepReport& step = {});
// Top-k is exact: the values and indices must equal a stable sort's (ties to the lower index),
// on rows with many ties and -inf entries (reference/topk_case.h).
std::string check_topk(Device& dev, const ops::TopKConfig& candidate, const ops::TopKProblem& p,
                       const Sabotage& sabotage = {});

template <>
struct FamilyTuner<ops::TopKFamily> {
  static auto candidates(const DeviceInfo& info, const ops::TopKProblem& p) {
    return topk_candidates(info, p);
  }
  static TunedTopK tune(Device& dev, const ops::TopKProblem& p, Timer& timer, const TunerOptions& o,
                        Deadline deadline, const StepReport& step) {
    return tune_topk(dev, p, timer, o, deadline, step);
  }
  static std::string check(Device& dev, const ops::TopKConfig& c, const ops::TopKProblem& p,
                           const Sabotage& sabotage) {
    return check_topk(dev, c, p, sabotage);
  }
};

}  // namespace vkf::tune
