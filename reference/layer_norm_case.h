#pragma once
// One LayerNorm problem as every caller that checks ops::layer_norm_forward and
// ops::layer_norm_backward against the double-precision reference poses it: the shader tests
// (tests/shaders/test_layer_norm.cpp), `vkf bench`'s rows and the tuner's correctness guard
// (tune/layer_norm_family.cpp). Written once so that they cannot drift apart: a LayerNormRun holds
// x, s and dy as their storage type holds them, gamma and beta in fp32, poisons every output (y, h,
// mean, rstd, dx, ds, dgamma, dbeta and the backward's scratch) with NaN unless the backward
// accumulates into it, records the forward then the backward, and compares what they wrote with
// reference/layer_norm's results.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/layer_norm_choice.h"
#include "reference/comparison.h"

namespace vkf::ref {

struct LayerNormCase {
  uint32_t rows = 1, d = 1;
  bool residual = false;        // post-LN: h = x + mask * s, and the backward's ds
  float dropout = 0.0f;         // the probability of dropping an element of s (residual only)
  DType dtype = DType::f32;     // storage of x, s, y, h, dy, dx, ds; the rest is fp32 in any
  ops::LayerNormConfig config;  // forced workgroup size, reduction and reads; 0/automatic: the
                                // engine's choice
  // dx, dgamma and dbeta start with random values that the backward adds to (its += paths).
  bool accumulate = false;
  // The dropout stream: StepScalars::seed and ::step (the ops' tensor_id is k_tensor_id), and
  // the share of a larger batch the rows are: sentences of sentence_len rows starting at batch
  // row dropout_row (StepScalars::dropout_row, the ops' batch_row_rows; 0: no offset).
  uint32_t seed = 99, step = 3;
  uint32_t dropout_row = 0, sentence_len = 0;

  // "3 rows of 513, residual, dropout 0.1, subgroup_rows wg64 texel, f16, accumulating".
  std::string describe() const;
};

// The dropout stream's tensor id in every run (the forward's and the backward's must agree).
constexpr uint32_t k_layer_norm_tensor_id = 7;

// x, s, dy (and dx0) as stored, [rows, d]; gamma, beta (and dparams0, where dgamma and dbeta
// start) fp32, [d]. s is empty outside residual mode, dx0 and dparams0 without accumulate.
struct LayerNormInputs {
  std::vector<float> x, s, gamma, beta, dy, dx0, dparams0;
};
// x uniform in [2, 4): an offset, so that a variance computed as E[x^2] - E[x]^2 would cancel;
// s, dy, dx0, dparams0 and beta in [-1, 1), gamma in [0.5, 1.5).
LayerNormInputs random_layer_norm_inputs(const LayerNormCase& c, std::mt19937& rng);

// What the kernels wrote (h and ds empty outside residual mode).
struct LayerNormOutputs {
  std::vector<float> y, h, mean, rstd, dx, ds, dgamma, dbeta;
};

// The tolerances (atol + rtol * |want|) the tests and the tuner hold LayerNorm to. h is held
// against the exact x + mask * s: the fp32 sum, then one rounding to storage; y is O(1); dx and
// ds sum over d. fp32: the arithmetic's error; f16: one more rounding of the stored output
// (2^-11 relative), with headroom, on top of it. mean, rstd, dgamma and dbeta are fp32 computed
// from exactly the stored inputs, so theirs do not depend on the storage type.
struct LayerNormTolerance {
  Tolerance h, y, mean, rstd, dx, params;
};
LayerNormTolerance layer_norm_tolerance(DType t);

class LayerNormRun {
 public:
  LayerNormRun(Device& dev, const LayerNormCase& c, LayerNormInputs inputs);
  LayerNormRun(Device& dev, const LayerNormCase& c, std::mt19937& rng)
      : LayerNormRun(dev, c, random_layer_norm_inputs(c, rng)) {}

  const LayerNormCase& spec() const { return c_; }
  const LayerNormInputs& inputs() const { return in_; }
  // The ops' arguments over this run's buffers, the case's configuration forced.
  ops::LayerNormForwardArgs forward_args() const;
  ops::LayerNormBackwardArgs backward_args() const;
  // Records the forward, then the backward. The outputs were poisoned (or set to dx0, dparams0)
  // when the run was made: record once per run.
  void record(Recorder& rec) const;
  // Overwrites the first word of y with ref::k_wrong_bits, as a wrong kernel would have written
  // it (the tuner's test hook).
  void corrupt(Recorder& rec) const;

  LayerNormOutputs outputs() const;
  // h (residual mode), y, mean, rstd, dx, ds (residual mode; exactly 0 where the mask dropped),
  // dgamma and dbeta against the reference. h against the exact sum; the normalisation and its
  // gradients against the reference evaluated at the kernel's h, because h is one rounding away
  // from the exact sum and a row whose values nearly agree magnifies that by rstd. With dropout
  // the rows must be a whole batch (dropout_row 0): a share's mask has no reference here.
  std::vector<Comparison> compare(const LayerNormTolerance& tol) const;

 private:
  Device& dev_;
  LayerNormCase c_;
  LayerNormInputs in_;
  Buffer x_, s_, gamma_, beta_, dy_, y_, h_, mean_, rstd_, dx_, ds_, dgamma_, dbeta_, scratch_,
      step_;
};

}  // namespace vkf::ref
