#pragma once
// One cross-entropy problem as every caller that checks ops::cross_entropy (and
// ops::cross_entropy_total) against the double-precision reference poses it: the shader tests
// (tests/shaders/test_loss.cpp), `vkf bench`'s row and the tuner's correctness guard
// (tune/cross_entropy_family.cpp). Written once so that they cannot drift apart: a CrossEntropyRun
// holds the logits as their storage type holds them and the targets (padding rows and a target
// outside the vocabulary among them, unless the caller gives its own), poisons every output
// (row loss, row log p, the gradient, the totals) with NaN, records the loss with its gradient
// (apart, in place, or none) and compares what was written with reference/loss's results.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/loss.h"
#include "reference/comparison.h"

namespace vkf::ref {

struct CrossEntropyCase {
  uint32_t rows = 1, vocab = 1;
  int32_t pad_id = 0;
  float label_smoothing = 0.0f;
  float grad_scale = 1.0f;  // StepScalars::grad_scale, which the gradient is multiplied by
  // Where the gradient goes: its own buffer, over the logits, or nowhere (then no step scalars
  // are bound either, and the logits must come back untouched).
  enum class Grad { separate, in_place, none } grad = Grad::separate;
  bool totals = false;       // also ops::cross_entropy_total, on the configuration's workgroup size
  DType dtype = DType::f32;  // storage of the logits and the gradient
  ops::RowKernelConfig config;  // forced; 0/automatic: the engine's choice
  float logit_range = 4.0f;     // random logits uniform in [-logit_range, logit_range)

  // "[16, 1000] pad 1, eps 0.1, grad x0.37, wg256 subgroup texel, in place, totals, f16".
  std::string describe() const;
};

// The logits as stored, [rows, vocab]; the targets, [rows].
struct CrossEntropyInputs {
  std::vector<float> logits;
  std::vector<int32_t> targets;
};
// Logits as the case says; targets uniform over the vocabulary except pad_id, with every third
// row (from the third) padding and, past 4 rows, the last one outside the vocabulary: both
// ignored, and their gradient must be exactly 0.
CrossEntropyInputs random_cross_entropy_inputs(const CrossEntropyCase& c, std::mt19937& rng);

// What the kernels wrote: dlogits is empty without a gradient; logits is the logits buffer after
// the run (the gradient, in place); totals only where the case runs them.
struct CrossEntropyOutputs {
  std::vector<float> loss, logp, dlogits, logits;
  ops::CrossEntropyTotals totals;
};

// The tolerances (atol + rtol * |want|; fp32 arithmetic on the device in either storage type):
// the row loss and log p are fp32 outputs in either; the gradient 1e-6 (times grad_scale) +
// 1e-4, or 1e-3 in f16 (one more rounding when stored: 2^-11 relative, 2^-25 absolute below
// f16's normal range, which the atol covers); the totals sum the rows' fp32 values.
struct CrossEntropyTolerance {
  Tolerance loss, grad, totals;
};
CrossEntropyTolerance cross_entropy_tolerance(DType t, float grad_scale);

class CrossEntropyRun {
 public:
  CrossEntropyRun(Device& dev, const CrossEntropyCase& c, CrossEntropyInputs inputs);
  CrossEntropyRun(Device& dev, const CrossEntropyCase& c, std::mt19937& rng)
      : CrossEntropyRun(dev, c, random_cross_entropy_inputs(c, rng)) {}

  const CrossEntropyCase& spec() const { return c_; }
  const CrossEntropyInputs& inputs() const { return in_; }
  // Rewrites the step scalars' grad_scale (a recorded run replays with it); the comparisons
  // then expect it.
  void set_grad_scale(float grad_scale);

  // Records ops::cross_entropy, then (with totals) ops::cross_entropy_total. The outputs were
  // poisoned when the run was made: record once per run (in place, the logits are overwritten).
  void record(Recorder& rec) const;
  // Overwrites the first word of the gradient (or, without one, of the row loss) with
  // ref::k_wrong_bits, as a wrong kernel would have written it (the tuner's test hook).
  void corrupt(Recorder& rec) const;

  CrossEntropyOutputs outputs() const;
  // "row loss", "row log p", then "dlogits" (exactly 0 in ignored rows) or, without a gradient,
  // "logits" (bit for bit as uploaded), then "totals" (the token count and the reserved word
  // exactly) where the case runs them.
  std::vector<Comparison> compare(const CrossEntropyTolerance& tol) const;
  // The same but the totals, on the given rows only (each row is independent of the others):
  // for a caller with more rows than it wants to download and recompute (vkf bench).
  std::vector<Comparison> compare_rows(const CrossEntropyTolerance& tol,
                                       const std::vector<uint32_t>& rows) const;

 private:
  Device& dev_;
  CrossEntropyCase c_;
  CrossEntropyInputs in_;
  Buffer logits_, targets_, step_, row_loss_, row_logp_, dlogits_, totals_;
};

}  // namespace vkf::ref
