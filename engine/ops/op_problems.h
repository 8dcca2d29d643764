#pragma once
// Every op problem a workload runs, by tuned family (problems.of<ops::LayerNormFamily>()): what
// a model states about itself (model/op_problems.h), what `vkf bench` runs, and what the tuner
// searches (tune/model_tuner.h).
#include "engine/ops/tuned_families.h"

namespace vkf::ops {

using OpProblems = PerFamily<WorkList>;

}  // namespace vkf::ops
