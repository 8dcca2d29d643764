#pragma once
// --tune auto|off|FILE, which `vkf train`, `translate` and `bench` share: whether their kernels
// run the device's tuning (engine/tuning_file.h) or the static tables, and the one line that
// says which. auto: the tuning file in the cache directory when it matches this device and
// driver, else a short tuning run first (the first run on a new driver), written there; off:
// the tables; FILE: that file (an error when it cannot be read; another device's or driver's is
// ignored, with a note).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/matmul_choice.h"
#include "model/config.h"

namespace vkf::app {

// The budget of auto's first tuning run.
constexpr double k_auto_tune_seconds = 30;

// Adds --tune (default: VKF_TUNE, else auto) to `sub`.
void add_tune_option(CLI::App& sub, std::string& value);

// The matmuls a model of `config` runs at `tokens` rows: its Linears' forward (A B^T) and, when
// training, their input and weight gradients (A B, A^T B). f32: the storage the model trains in.
std::vector<ops::MatmulProblem> model_matmul_shapes(const model::ModelConfig& config,
                                                    uint32_t tokens, bool training);

// Applies `choice` to `dev` (Device::set_tuning) and prints one line to stderr, "<who>:
// kernels tuned (FILE)" or "<who>: kernels default (why)" (every family the file holds). `shapes`:
// what auto tunes when there is no file. auto looks in `cache_dir` ("": the device's pipeline cache
// directory).
void apply_tuning(Device& dev, const std::string& choice,
                  const std::vector<ops::MatmulProblem>& shapes, const std::string& who,
                  const std::string& cache_dir = "");

}  // namespace vkf::app
