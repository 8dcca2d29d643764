#pragma once
// The tuner's side of a tuned op family (the engine's side: engine/ops/tuned_families.h). Each
// family F specialises FamilyTuner<F> in its own file, tune/<family>_family.h, with
//   candidates(info, problem)   its search space, the default first (the prior);
//   tune(dev, work, ...)        its timed run over them (search.h), as a tuning-file entry;
//   check(dev, config, problem) its correctness guard, through the family's harness
//                               (reference/*_case.h) against the double-precision reference.
// A new knob of a family touches its engine description, this file of its own, its shader and
// its test; the tuner's budget (model_tuner.h) and the imported files' checks
// (tuning_verify.h) walk every family and name none.
#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/error.h"
#include "engine/recorder.h"
#include "engine/tuning_file.h"
#include "reference/comparison.h"
#include "tune/search.h"
#include "tune/timer.h"

namespace vkf::tune {

// Test hook: true for a candidate (by its description, e.g. MatmulConfig::describe()) whose
// output the check corrupts after its kernel, as a wrong kernel would have written it. Every
// family's check takes it.
using Sabotage = std::function<bool(const std::string& candidate)>;

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
  Sabotage sabotage;  // test hook, see Sabotage
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

using Deadline = std::chrono::steady_clock::time_point;

// Specialised by each family (tune/<family>_family.h); see above.
template <class F>
struct FamilyTuner;

// What the families' tuners share.

// Small values (0x2c00 halves are 0.0625; the f32 pattern 0.03125): the timing does not depend
// on them, but denormals or NaN could slow a CPU device down.
void fill_small(Device& dev, std::initializer_list<const Buffer*> buffers, DType t);

// The seconds of one run of what `record` records, through `timer`.
double time_sequence(Device& dev, Timer& timer, const std::string& candidate,
                     const std::string& shape_class, double give_up,
                     const std::function<void(Recorder&)>& record);

// The workgroup sizes the row kernels' and Adam's searches try.
inline constexpr uint32_t k_workgroups[] = {32, 64, 128, 256, 512, 1024};
// How far apart two sizes are, in doublings: the searches try the nearest first.
double wg_distance(uint32_t a, uint32_t b);

// The first comparison that failed, "<what> wrong at element i: <how> (<where>)"; "" when none.
std::string first_failure(const std::vector<ref::Comparison>& checked, const std::string& where);

// Records a harness's run (reference/*_case.h: record, corrupt), corrupted after its kernel
// when `wrong` (the Sabotage hook), and runs it: "" when it ran, else "the op refused it: ...".
template <class Run>
std::string run_harness(Device& dev, const Run& run, bool wrong) {
  try {
    Recorder rec(dev);
    run.record(rec);
    if (wrong) run.corrupt(rec);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return "";
}

// The search's result as the family's tuning-file entry.
template <class F>
TunedOf<F> tuned_entry(const typename F::Problem& shape, const std::string& default_name,
                       SearchResult<typename F::Config> found) {
  TunedOf<F> r;
  r.shape_class = F::shape_class(shape);
  r.shape = shape;
  r.config = std::move(found.config);
  r.default_name = default_name;
  r.default_seconds = found.default_seconds;
  r.seconds = found.seconds;
  r.tried = found.tried;
  r.untried = found.untried;
  r.rejected = std::move(found.rejected);
  return r;
}

}  // namespace vkf::tune
