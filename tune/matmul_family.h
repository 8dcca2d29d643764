#pragma once
// The tuner's side of matmul (tune/family_tuner.h). The search space is the kernel's
// specialization constants and variants: workgroup (subgroup) size, C tile, per-invocation
// block, k step, shared-memory staging or direct reads, texel or storage-buffer reads, and the
// tensor-core rows where the device has them (with, around the coopmat2 rows, their tile, k
// block and workgroup size); and, for a problem with a split-k workspace, the split.
#include <string>
#include <vector>

#include "engine/ops/matmul_choice.h"
#include "tune/family_tuner.h"

namespace vkf::tune {

// Every candidate fits `info` (matmul_config_misfit) and can run `p` (coopmat rows for f16
// only, where the build has their kernel), without duplicates (MatmulConfig::same_kernel), in
// the order the search tries them: the static table's row for `p` first (the prior: what an
// untuned run gets), then the table's other rows and the generated configurations, nearest the
// prior first, so that a search cut short by its budget has tried the likeliest ones.
std::vector<ops::MatmulConfig> matmul_candidates(const DeviceInfo& info,
                                                 const ops::MatmulProblem& p);

// One shape's search. The default (the static table's row: what an untuned run gets) is timed
// and checked first; the winner is the default unless a checked candidate is faster. A shape
// with a split-k workspace (MatmulProblem::workspace) is timed as it runs, split where the
// engine's rule splits it, and its winner's split is then searched in the last quarter of its
// time: the rule first, then unsplit and 2, 4, 8 and 16 slices (MatmulConfig::split_k). A default
// that fails the check is reported among the rejected and the first correct candidate replaces
// it; with none correct, the entry keeps the default (the run behaves as untuned).
// `step` hears of each candidate before it is timed: its index, the count, the best so far.
TunedMatmul tune_matmul(Device& dev, const ops::MatmulProblem& shape, Timer& timer,
                        const TunerOptions& options, Deadline deadline,
                        const StepReport& step = {});

// "" when `candidate` computes the problem's kind of matmul right on `dev`; else what was wrong
// (the first element out of tolerance, or the error the op threw). It runs small matmuls of the
// problem's storage type and transposes through the matmul harness (reference/matmul_case.h):
// odd sizes (partial tiles, scalar reads, k tails) with a batch of two, and 4-aligned ones (the
// vector and texel reads) with beta and a bias epilogue; where the problem has a split-k
// workspace and the candidate may split, a third whose k is cut into three slices. C starts
// poisoned where beta is 0.
std::string check_matmul(Device& dev, const ops::MatmulConfig& candidate,
                         const ops::MatmulProblem& p, const Sabotage& sabotage = {});

template <>
struct FamilyTuner<ops::MatmulFamily> {
  static auto candidates(const DeviceInfo& info, const ops::MatmulProblem& p) {
    return matmul_candidates(info, p);
  }
  static TunedMatmul tune(Device& dev, const ops::MatmulProblem& p, Timer& timer,
                          const TunerOptions& o, Deadline deadline, const StepReport& step) {
    return tune_matmul(dev, p, timer, o, deadline, step);
  }
  static std::string check(Device& dev, const ops::MatmulConfig& c, const ops::MatmulProblem& p,
                           const Sabotage& sabotage) {
    return check_matmul(dev, c, p, sabotage);
  }
};

}  // namespace vkf::tune
