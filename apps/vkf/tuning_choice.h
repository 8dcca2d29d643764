#pragma once
// --tune auto|off|FILE, which `vkf train`, `translate` and `bench` share: whether their kernels
// run the device's tuning (engine/tuning_file.h) or the static tables, and the one line that
// says which. auto: the tuning file in the cache directory when it matches this device and
// driver, else a short tuning run first (the first run on a new driver) over every family the
// command runs, written there; off: the tables; FILE: that file (an error when it cannot be
// read; another device's or driver's is ignored, with a note). The shapes a model runs are
// built here for `vkf tune` too, so that auto's first run and `vkf tune --preset` search the
// same classes.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "apps/vkf/bench/shapes.h"
#include "engine/device.h"
#include "engine/ops/matmul_choice.h"
#include "model/config.h"
#include "tune/model_tuner.h"

namespace vkf::app {

// Adds --tune (default: VKF_TUNE, else auto) to `sub`.
void add_tune_option(CLI::App& sub, std::string& value);

// What a model runs, for the tuner: `tokens` rows a step (a batch), sentences of `len` tokens,
// training (forward and backward) or translating (forward; the decoder's one-row attention steps
// run fixed tiles and are not searched), in `dtype` storage.
struct ModelWork {
  uint32_t tokens = 0, len = 0;
  bool training = true;
  DType dtype = DType::f32;
  // Decoding: the beam search's top-k over the vocabulary each step, at beam x sentences rows
  // (0: none; it runs on fp32 log-probabilities whatever the storage).
  uint32_t beam = 0, sentences = 0;
};

// The shapes of every family a model of `config` runs: its Linears' matmuls (forward A B^T;
// training adds the input and weight gradients, A B and A^T B), the encoder's and decoder's
// attention (each kernel: forward, dK/dV, dQ), LayerNorm over d_model and, training, the loss
// over the vocabulary and Adam over the parameters and, decoding, the beam's top-k (none of
// these three when config.vocab_size is 0).
tune::TuneShapes model_tune_shapes(const model::ModelConfig& config, const ModelWork& work,
                                   const DeviceInfo& info);

// The f32 matmul shapes of the benchmark's `suite` (apps/vkf/bench/shapes.h) up to 2^32 m n k
// (beyond, one run of the default alone takes seconds on a CPU device, and the shape classes
// are the same): what `vkf bench --tune auto` and `vkf tune` without a model search.
tune::TuneShapes bench_tune_shapes(bench::Suite suite);

// Applies `choice` to `dev` (Device::set_tuning) and prints one line to stderr, "<who>:
// kernels tuned (FILE)" or "<who>: kernels default (why)" (every family the file holds). `shapes`:
// what auto tunes when there is no file, within VKF_TUNE_BUDGET seconds (default 30). auto looks
// in `cache_dir` ("": the device's pipeline cache directory).
void apply_tuning(Device& dev, const std::string& choice, const tune::TuneShapes& shapes,
                  const std::string& who, const std::string& cache_dir = "");

}  // namespace vkf::app
