#include "tune/row_checks.h"

#include <algorithm>
#include <random>

#include "engine/error.h"
#include "reference/adam_case.h"
#include "reference/cross_entropy_case.h"
#include "reference/layer_norm_case.h"
#include "reference/topk_case.h"

namespace vkf::tune {
namespace {

// The first comparison that failed, "<what> wrong at element i: <how> (<where>)"; "" when none.
std::string first_failure(const std::vector<ref::Comparison>& checked, const std::string& where) {
  for (const ref::Comparison& cmp : checked)
    if (!cmp.ok())
      return cmp.what() + " wrong at element " + std::to_string(cmp.worst_index()) + ": " +
             cmp.describe() + " (" + where + ")";
  return "";
}

// One shape through the LayerNorm harness (reference/layer_norm_case.h): the candidate forced
// on the forward and the backward, outputs poisoned, the tests' tolerances.
std::string check_layer_norm_shape(Device& dev, const ops::LayerNormConfig& c, DType t,
                                   uint32_t rows, uint32_t d, bool wrong) {
  ref::LayerNormCase lc;
  lc.rows = rows, lc.d = d, lc.dtype = t, lc.config = c;
  std::mt19937 rng(rows * 977 + d);
  const ref::LayerNormRun run(dev, lc, rng);
  try {
    Recorder rec(dev);
    run.record(rec);
    if (wrong) run.corrupt(rec);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return first_failure(run.compare(ref::layer_norm_tolerance(t)),
                       std::to_string(rows) + " rows of " + std::to_string(d));
}

}  // namespace

std::string check_layer_norm(Device& dev, const ops::LayerNormConfig& candidate,
                             const ops::LayerNormProblem& p, const Sabotage& sabotage) {
  const bool wrong = sabotage && sabotage(ops::describe(candidate));
  // The problem's row length, and an odd one near it (no workgroup divides it).
  for (auto [rows, d] : {std::pair{13u, p.d}, std::pair{7u, p.d | 1u}})
    if (std::string why = check_layer_norm_shape(dev, candidate, p.dtype, rows, d, wrong);
        !why.empty())
      return why;
  return "";
}

// Through the cross-entropy harness (reference/cross_entropy_case.h): label smoothing, a
// gradient scale, padding rows and a target outside the vocabulary among 9 rows, a vocabulary
// no workgroup divides.
std::string check_cross_entropy(Device& dev, const ops::RowKernelConfig& candidate,
                                const ops::CrossEntropyProblem& p, const Sabotage& sabotage) {
  ref::CrossEntropyCase c;
  c.rows = 9, c.vocab = std::min(p.vocab, 3000u) | 1u, c.pad_id = 0;
  c.label_smoothing = 0.1f, c.grad_scale = 0.37f;
  c.dtype = p.dtype, c.config = candidate;
  std::mt19937 rng(c.vocab);
  const ref::CrossEntropyRun run(dev, c, rng);
  try {
    Recorder rec(dev);
    run.record(rec);
    if (sabotage && sabotage(ops::describe(candidate))) run.corrupt(rec);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return first_failure(run.compare(ref::cross_entropy_tolerance(c.dtype, c.grad_scale)),
                       std::to_string(c.rows) + " rows of " + std::to_string(c.vocab));
}

// Through the top-k harness (reference/topk_case.h): 9 rows of an odd length with many ties
// and masked entries, plain and with log-softmax (as decoding runs it).
std::string check_topk(Device& dev, const ops::TopKConfig& candidate, const ops::TopKProblem& p,
                       const Sabotage& sabotage) {
  ref::TopKCase c;
  c.rows = 9, c.n = std::max(std::min(p.n, 3001u) | 1u, p.k), c.k = p.k;
  c.dtype = p.dtype, c.config = candidate;
  std::mt19937 rng(c.n * 31 + c.k);
  const std::vector<float> x = ref::random_topk_values(c, ref::TopKValues::ties, rng);
  for (bool log_softmax : {false, true}) {
    c.log_softmax = log_softmax;
    const ref::TopKRun run(dev, c, x);
    try {
      Recorder rec(dev);
      run.record(rec);
      if (sabotage && sabotage(ops::describe(candidate))) run.corrupt(rec);
      rec.finish().run();
    } catch (const Error& e) {
      return std::string("the op refused it: ") + e.what();
    }
    if (std::string why = first_failure(run.compare(), c.describe()); !why.empty()) return why;
  }
  return "";
}

// Through the Adam harness (reference/adam_case.h): one clipped AdamW step of 1001 parameters
// (no workgroup or element count divides it) from random moments, the tests' tolerances.
std::string check_adam(Device& dev, const ops::AdamConfig& candidate, const Sabotage& sabotage) {
  ref::AdamCase c;
  c.n = 1001, c.step = 3, c.grad_scale = 0.5f;
  c.options = {.lr = 2.0f, .d_model = 64.0f, .warmup_steps = 4.0f, .weight_decay = 0.01f};
  c.options.max_grad_norm = 1.0f;  // random gradients of 1001 elements have norm ~18: clipped
  c.config = candidate;
  std::mt19937 rng(c.n);
  const ref::AdamRun run(dev, c, rng);
  try {
    Recorder rec(dev);
    run.record(rec);
    if (sabotage && sabotage(ops::describe(candidate))) run.corrupt(rec);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return first_failure(run.compare(ref::adam_tolerance()), c.describe());
}

}  // namespace vkf::tune
