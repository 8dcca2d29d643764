#pragma once
// Every op family a model runs, tuned within one budget: the shapes of each family reduced to one
// per shape class, then the families in turn (in ops::TunedFamilies' order: by the share of a
// training step they take, so that no overrun of the others eats into matmul's).
// Each family gets an even share of what is left when it starts, each of its classes an even share
// of what is left of the family's. The budget is hard: once it is spent no candidate is started
// (the class being searched stops, the classes after it are not searched) and the report counts
// what was left untried. A family's share is hard too, but for its first class: a family that
// overran it leaves its other classes at the defaults instead of taking the next family's time.
#include <string>
#include <vector>

#include "engine/ops/op_problems.h"
#include "tune/families.h"

namespace vkf::tune {

// The problems to tune, by family: a model's (model/op_problems.h) or a benchmark's.
using TuneShapes = ops::OpProblems;

struct TuneReport {
  TuningFile file;  // keyed to the device
  // "attention f32/fwd/...": the classes the budget left unsearched (they keep the defaults).
  std::vector<std::string> skipped;
  uint32_t untried = 0;  // candidates left untimed, over every class searched
};

// Progress names each class "<family> <class>".
TuneReport tune_model(Device& dev, const TuneShapes& shapes, Timer& timer,
                      const TunerOptions& options);

}  // namespace vkf::tune
