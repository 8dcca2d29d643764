#pragma once
// One Adam step as every caller that checks ops::adam against the double-precision reference
// poses it: the shader tests (tests/shaders/test_adam.cpp), `vkf bench`'s row and the tuner's
// correctness guard (tune/adam_family.cpp). Written once so that they cannot drift apart: an
// AdamRun holds w, g, m and v in fp32 and the gradient's norm as ops::grad_norm leaves it,
// records one step and compares the updated w, m and v with reference/optim's. w, m and v are
// read and written in place: an element the kernel skips keeps its old value, which the
// comparison catches as surely as a poison (m and v start random, not 0).
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/adam.h"
#include "reference/comparison.h"

namespace vkf::ref {

struct AdamCase {
  uint32_t n = 1;
  ops::AdamOptions options;
  std::optional<ops::AdamConfig> config;  // forced; unset: the engine's choice (tuned, default)
  // StepScalars: the 1-based step, the factor on the gradient and on the learning rate.
  uint32_t step = 1;
  float grad_scale = 1.0f, lr_scale = 1.0f;
  // Binds the gradient's GradNormResult (clipping and skip_nonfinite need it).
  bool norm = true;
  // Random moments: m uniform in [-m_range, m_range), v in [0, v_range).
  float m_range = 0.1f, v_range = 0.01f;

  // "1001 parameters, step 3, grad x0.5, clip 1, decay 0.01, wg256 x4 texel".
  std::string describe() const;
};

struct AdamInputs {
  std::vector<float> w, g, m, v;  // [n] each
};
// w and g uniform in [-1, 1); m and v as the case says.
AdamInputs random_adam_inputs(const AdamCase& c, std::mt19937& rng);

// w is held to the size of its update (w_new - w_old, 1e-5 of w in a late step of a big model,
// where a tolerance on w itself would pass any update); m and v to the size of their two terms
// (b1 m + (1 - b1) g', b2 v + (1 - b2) g'^2).
struct AdamTolerance {
  Tolerance w_update, m, v;
};
AdamTolerance adam_tolerance();

class AdamRun {
 public:
  AdamRun(Device& dev, const AdamCase& c, AdamInputs inputs);
  AdamRun(Device& dev, const AdamCase& c, std::mt19937& rng)
      : AdamRun(dev, c, random_adam_inputs(c, rng)) {}

  const AdamCase& spec() const { return c_; }
  const AdamInputs& inputs() const { return in_; }
  ops::AdamArgs args() const;
  // Records one step. w, m and v are updated in place: record once per run.
  void record(Recorder& rec) const;
  // Overwrites the first word of w with ref::k_wrong_bits, as a wrong kernel would have written
  // it (the tuner's and `vkf bench`'s test hooks).
  void corrupt(Recorder& rec) const;
  // "w", "m" and "v" against the reference step, on every element or on `sampled` ones (the
  // update is element-wise: a caller with millions of parameters checks a sample).
  std::vector<Comparison> compare(const AdamTolerance& tol,
                                  const std::vector<uint32_t>& sampled = {}) const;

 private:
  Device& dev_;
  AdamCase c_;
  AdamInputs in_;
  double norm_ = 0;
  Buffer w_, g_, m_, v_, step_, norm_buffer_;
};

}  // namespace vkf::ref
