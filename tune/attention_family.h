#pragma once
// The tuner's side of attention (tune/family_tuner.h), a search for each kernel (forward, dK/dV,
// dQ): the rows path's rows per lane and loop unrolling, the tiled path's query and key tiles
// and workgroup size.
#include <string>
#include <vector>

#include "engine/ops/attention_choice.h"
#include "tune/family_tuner.h"

namespace vkf::tune {

using ops::AttentionWork;

// The configuration an untuned run gets for `p` on `info` (attention_default_tiles with the
// rows capped by the sequence and the unroll resolved, as the op resolves them), complete.
ops::AttentionTiles attention_default(const DeviceInfo& info, const ops::AttentionProblem& p);

// Every candidate `info` can run (attention_tiles_misfit), without duplicates (same_kernel), in
// the order the search tries them: the default first (the prior), then its own path's
// configurations nearest it first, then the other path's.
std::vector<ops::AttentionTiles> attention_candidates(const DeviceInfo& info,
                                                      const ops::AttentionProblem& p);

// The backward kernels are timed within the whole backward (the delta kernel and the other
// kernel at its default run too), so their speed-ups are of the backward, not of one kernel.
TunedAttention tune_attention(Device& dev, const AttentionWork& work, Timer& timer,
                              const TunerOptions& options, Deadline deadline,
                              const StepReport& step = {});

// "" when `candidate` computes `p`'s kind of attention right on `dev`; else what was wrong. The
// candidate at its kernel, the defaults at the others, run the forward and the backward on a
// small problem of the same storage type, head dims and masking (two sequences, one with
// padded keys, lengths no tile divides), and every output (O, the log-sum-exp, dQ, dK, dV) is
// compared with the double-precision reference through the attention harness
// (reference/attention_case.h). Outputs start poisoned.
std::string check_attention(Device& dev, const ops::AttentionTiles& candidate,
                            const ops::AttentionProblem& p, const Sabotage& sabotage = {});

template <>
struct FamilyTuner<ops::AttentionFamily> {
  static auto candidates(const DeviceInfo& info, const ops::AttentionProblem& p) {
    return attention_candidates(info, p);
  }
  static TunedAttention tune(Device& dev, const AttentionWork& w, Timer& timer,
                             const TunerOptions& o, Deadline deadline, const StepReport& step) {
    return tune_attention(dev, w, timer, o, deadline, step);
  }
  static std::string check(Device& dev, const ops::AttentionTiles& c,
                           const ops::AttentionProblem& p, const Sabotage& sabotage) {
    return check_attention(dev, c, p, sabotage);
  }
};

}  // namespace vkf::tune
