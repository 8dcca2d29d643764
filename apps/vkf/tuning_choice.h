#pragma once
// --tune auto|off|FILE, which `vkf train`, `translate` and `bench` share: whether their kernels
// run the device's tuning (engine/tuning_file.h) or the static tables, and the one line that
// says which. auto: the tuning file in the cache directory when it matches this device and
// driver, else a short tuning run first (the first run on a new driver) over every family the
// command runs, written there; off: the tables; FILE: that file (an error when it cannot be
// read; another device's or driver's is ignored, with a note). The model states the problems
// it runs (model/op_problems.h), so auto's first run and `vkf tune --preset` search the same
// classes; what is left here is the tools' side: the flag, VKF_TUNE_BUDGET and the log line.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "apps/vkf/bench/shapes.h"
#include "engine/device.h"
#include "engine/ops/matmul_choice.h"
#include "model/op_problems.h"
#include "model/tuning.h"
#include "tune/model_tuner.h"

namespace vkf::app {

// Adds --tune (default: VKF_TUNE, else auto) to `sub`.
void add_tune_option(CLI::App& sub, std::string& value);

// The f32 matmul shapes of the benchmark's `suite` (apps/vkf/bench/shapes.h) up to 2^32 m n k
// (beyond, one run of the default alone takes seconds on a CPU device, and the shape classes
// are the same): what `vkf bench --tune auto` and `vkf tune` without a model search.
tune::TuneShapes bench_tune_shapes(bench::Suite suite);

// --tune's value as the library takes it, with VKF_TUNE_BUDGET (default 30 s) for auto's first
// run; auto looks in `cache_dir` ("": the device's pipeline cache directory).
model::TuningChoice tuning_choice(const std::string& value, const std::string& cache_dir = "");

// model::apply_tuning with VKF_TUNE_BUDGET (default 30 s) for auto's first run, printing one
// line to stderr, "<who>: kernels tuned (FILE)" or "<who>: kernels default (why)", and the
// notes on the way. `shapes`: what auto tunes when there is no file. auto looks in `cache_dir`
// ("": the device's pipeline cache directory).
void apply_tuning(Device& dev, const std::string& choice, const tune::TuneShapes& shapes,
                  const std::string& who, const std::string& cache_dir = "");

}  // namespace vkf::app
