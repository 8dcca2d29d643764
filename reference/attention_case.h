#pragma once
// One attention problem as every caller that checks ops::attention_forward and
// ops::attention_backward against the double-precision reference poses it: the shader tests
// (tests/shaders/test_attention.cpp), `vkf bench`'s attention rows
// (apps/vkf/bench/rows_attention.cpp) and the tuner's correctness guard
// (tune/attention_family.cpp). Written once so that they cannot drift apart: an AttentionRun holds
// q, k, v and dO as their storage type holds them, the masks and the step scalars on the device,
// poisons every output (O, LSE, dQ, dK, dV and the delta workspace) with NaN, and compares what the
// kernels wrote with reference/attention's results, over every head or over the heads asked for.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/attention.h"
#include "reference/attention.h"
#include "reference/comparison.h"

namespace vkf::ref {

struct AttentionCase {
  AttentionShape s;  // dims, masks and the dropout stream; every tensor contiguous
  DType dtype = DType::f32;
  float qk_range = 2.0f;  // q and k uniform in [-qk_range, qk_range); v and dO in [-1, 1)

  // "2x3 heads, 7x33, d 16/16, causal, dropout 0.2, f32" for failure messages.
  std::string describe() const;
};

// q, k, v and dO as stored, contiguous [batch, heads, len, d].
struct AttentionInputs {
  std::vector<float> q, k, v, d_o;
};
AttentionInputs random_attention_inputs(const AttentionCase& c, std::mt19937& rng);

// The tolerances the tests and the tuner hold attention to, per element relative to |want|:
// fp32 with inputs up to 2 in magnitude, d up to 128 and sums over up to 70 keys; f16 storage
// rounds the outputs to 11 bits. LSE stays fp32 in both.
struct AttentionTolerance {
  Tolerance o, lse, grads;
};
AttentionTolerance attention_tolerance(DType t);

class AttentionRun {
 public:
  AttentionRun(Device& dev, const AttentionCase& c, AttentionInputs inputs);
  AttentionRun(Device& dev, const AttentionCase& c, std::mt19937& rng)
      : AttentionRun(dev, c, random_attention_inputs(c, rng)) {}

  const AttentionCase& spec() const { return c_; }
  const AttentionInputs& inputs() const { return in_; }
  // Rewrites the step scalars the dropout mask reads (a recorded run replays with them): the
  // seed, and the batch row this batch starts at in a larger one (StepScalars::dropout_row). The
  // reference comparisons use the new seed; dropout_row != 0 has no reference here.
  void set_dropout_stream(uint32_t seed, uint32_t dropout_row = 0);

  // The ops' arguments over this run's buffers, every kernel on `tiles`.
  ops::AttentionArgs forward_args(const ops::AttentionTiles& tiles = {}) const;
  ops::AttentionBackwardArgs backward_args(const ops::AttentionTiles& tiles = {}) const;
  // Fills O, LSE, dQ, dK, dV and delta with NaN: an output a kernel leaves unwritten cannot pass.
  void poison(Recorder& rec) const;
  // Overwrites the first word of `kernel`'s output (O, dK or dQ) with ref::k_wrong_bits, as a
  // wrong kernel would have written it (the tuner's and the bench's test hooks).
  void corrupt(Recorder& rec, ops::AttentionKernel kernel) const;

  // The outputs as the device holds them.
  std::vector<float> o() const;
  std::vector<float> lse() const;
  std::vector<float> d_q() const;
  std::vector<float> d_k() const;
  std::vector<float> d_v() const;

  // O and LSE, then dQ, dK and dV, against the reference: over the whole batch when `heads` is
  // empty, else over those heads (batch b's head h is b * heads + h), each against a
  // one-head reference; with dropout only head 0 has one (its mask numbers its elements as the
  // whole batch's do).
  std::vector<Comparison> compare_forward(const AttentionTolerance& tol,
                                          const std::vector<uint32_t>& heads = {}) const;
  std::vector<Comparison> compare_backward(const AttentionTolerance& tol,
                                           const std::vector<uint32_t>& heads = {}) const;

 private:
  std::vector<Comparison> compare(bool backward, const AttentionTolerance& tol,
                                  const std::vector<uint32_t>& heads) const;

  Device& dev_;
  AttentionCase c_;
  AttentionInputs in_;
  uint32_t dropout_row_ = 0;
  Buffer q_, k_, v_, o_, lse_, d_o_, d_q_, d_k_, d_v_, delta_, key_len_, q_len_, scalars_;
};

}  // namespace vkf::ref
