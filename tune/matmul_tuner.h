#pragma once
// The matmul tuner: for each shape the model runs, times the candidates of matmul_candidates()
// on the device (through a Timer), prunes those that cannot win, checks each one it would keep
// against the CPU reference (check_matmul) and drops any that is wrong, saying why, all within a
// time budget. The winners make a TuningFile (engine/tuning_file.h).
#include <chrono>
#include <functional>
#include <span>
#include <string>

#include "engine/device.h"
#include "engine/tuning_file.h"
#include "tune/matmul_check.h"
#include "tune/search.h"
#include "tune/timer.h"

namespace vkf::tune {

struct Progress {
  size_t shape = 0, shapes = 0;  // the shape being tuned (0-based) of how many
  size_t candidate = 0, candidates = 0;
  std::string shape_class, best;  // best: the winner so far's configuration
  // Of the whole run: by candidates, or by the budget where further, never past this shape.
  double fraction = 0;
};

struct TunerOptions {
  double budget_seconds = 120;  // the whole run, split evenly among the shapes
  // Repeated calls while the search runs (a progress bar).
  std::function<void(const Progress&)> progress;
  Sabotage sabotage;  // test hook, see check_matmul
  // A candidate is timed to the end only while its first run is within this factor of the
  // best so far.
  double prune_factor = 1.5;
  // At most this many candidates a search, the default included (0: as many as the budget
  // allows): a matmul with a split-k workspace has two, its kernels' and then its split's. The
  // tests keep the search short with it.
  size_t max_candidates = 0;
  // A winner other than the default is timed again this many times, alternating with the
  // default, and kept only when its median is faster than the default's by min_gain or more
  // (search.h). On a shared 2-core machine, single timings of the same kernel moved by 5-15%:
  // a 90 s `vkf tune` there picked rows that the benchmark then ran at 0.87-0.94x the default.
  uint32_t confirm_rounds = 2;
  double min_gain = 0.03;
};

// One shape's search. The default (the static table's row: what an untuned run gets) is timed
// and checked first; the winner is the default unless a checked candidate is faster. A shape
// with a split-k workspace (MatmulProblem::workspace) is timed as it runs, split where the
// engine's rule splits it, and its winner's split is then searched in the last quarter of its
// time: the rule first, then unsplit and 2, 4, 8 and 16 slices (MatmulConfig::split_k). A default
// that fails the check is reported among the rejected and the first correct candidate replaces
// it; with none correct, the entry keeps the default (the run behaves as untuned).
// `step` hears of each candidate before it is timed: its index, the count, the best so far.
TunedMatmul tune_matmul(Device& dev, const ops::MatmulProblem& shape, Timer& timer,
                        const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                        const StepReport& step = {});

// Every shape in turn (shapes of one class after the first are skipped), within
// options.budget_seconds; the file is keyed to `dev`.
TuningFile tune_matmuls(Device& dev, std::span<const ops::MatmulProblem> shapes, Timer& timer,
                        const TunerOptions& options);

}  // namespace vkf::tune
