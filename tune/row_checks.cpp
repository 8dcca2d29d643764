#include "tune/row_checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/error.h"
#include "engine/ops/adam.h"
#include "engine/ops/topk.h"
#include "engine/step_scalars.h"
#include "reference/cross_entropy_case.h"
#include "reference/layer_norm_case.h"
#include "reference/loss.h"
#include "reference/optim.h"
#include "reference/stored.h"
#include "reference/topk.h"

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

std::string check_topk(Device& dev, const ops::TopKConfig& candidate, const ops::TopKProblem& p,
                       const Sabotage& sabotage) {
  const DType t = p.dtype;
  const uint32_t rows = 9, n = std::max(std::min(p.n, 3001u) | 1u, p.k), k = p.k;
  std::mt19937 rng(n * 31 + k);
  // Multiples of 1/8 (exact in f16): many ties; every fifth entry -inf (a masked token).
  std::vector<float> x(size_t{rows} * n);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i % 5 == 3 ? -std::numeric_limits<float>::infinity()
                      : float(int(rng() % 160) - 120) * 0.125f;
  const ref::TopKResult want = ref::topk(x, rows, n, k);
  const std::vector<double> lse = ref::row_log_sum_exp(x, rows, n);
  const uint32_t es = dtype_bytes(t);
  Buffer xb = dev.allocate(x.size() * es, "tuner check values"),
         vb = dev.allocate(size_t{rows} * k * 4, "tuner check top values"),
         ib = dev.allocate(size_t{rows} * k * 4, "tuner check top indices"),
         scratch = dev.allocate(
             std::max<uint64_t>(16, ops::topk_scratch_bytes(rows, n, k, candidate, true)),
             "tuner check scratch");
  ref::upload_stored(dev, xb, x, t);
  // The selection is exact (equality); with log_softmax, as decoding runs it, the values are the
  // winners' log-probabilities, within fp32 rounding of the reference's.
  for (bool log_softmax : {false, true}) {
    ref::poison(dev, vb, rows * k, DType::f32);
    ref::poison(dev, ib, rows * k, DType::f32);
    try {
      Recorder rec(dev);
      ops::topk(dev, rec,
                {.dtype = t,
                 .values = xb,
                 .out_values = vb,
                 .out_indices = ib,
                 .scratch = scratch,
                 .rows = rows,
                 .n = n,
                 .k = k,
                 .config = candidate,
                 .log_softmax = log_softmax});
      if (sabotage && sabotage(ops::describe(candidate)))
        rec.fill(ib.ref().slice(0, 4), ref::k_wrong_bits);
      rec.finish().run();
    } catch (const Error& e) {
      return std::string("the op refused it: ") + e.what();
    }
    const std::vector<float> got_v = dev.download<float>(vb, rows * k);
    const std::vector<uint32_t> got_i = dev.download<uint32_t>(ib, rows * k);
    for (size_t j = 0; j < got_v.size(); ++j) {
      const double want_v = log_softmax ? want.values[j] - lse[j / k] : want.values[j];
      const bool value_ok = log_softmax && std::isfinite(want_v)
                                ? std::fabs(got_v[j] - want_v) <= 2e-5 + 1e-5 * std::fabs(want_v)
                                : got_v[j] == want_v;
      if (got_i[j] != want.indices[j] || !value_ok)
        return "entry " + std::to_string(j % k) + " of row " + std::to_string(j / k) + " is (" +
               std::to_string(got_i[j]) + ", " + std::to_string(got_v[j]) + "), not (" +
               std::to_string(want.indices[j]) + ", " + std::to_string(want_v) + ") (" +
               std::to_string(rows) + " rows of " + std::to_string(n) + ", k " + std::to_string(k) +
               (log_softmax ? ", log-softmax" : "") + ")";
    }
  }
  return "";
}

std::string check_adam(Device& dev, const ops::AdamConfig& candidate, const Sabotage& sabotage) {
  const uint32_t n = 1001, step = 3;
  const float grad_scale = 0.5f;
  ops::AdamOptions o{.lr = 2.0f, .d_model = 64.0f, .warmup_steps = 4.0f, .weight_decay = 0.01f};
  o.max_grad_norm = 1.0f;  // random gradients of 1001 elements have norm ~18: clipped
  std::mt19937 rng(n);
  const std::vector<float> w = ref::random_stored(rng, n, DType::f32),
                           g = ref::random_stored(rng, n, DType::f32),
                           m = ref::random_stored(rng, n, DType::f32, -0.1f, 0.1f),
                           v = ref::random_stored(rng, n, DType::f32, 0.0f, 0.01f);
  Buffer wb = dev.allocate(n * 4, "tuner check w"), gb = dev.allocate(n * 4, "tuner check g"),
         mb = dev.allocate(n * 4, "tuner check m"), vb = dev.allocate(n * 4, "tuner check v"),
         normb = dev.allocate(16, "tuner check norm"),
         stepb = dev.allocate(sizeof(StepScalars), "tuner check step", MemoryKind::host);
  StepScalars st;
  st.step = step;
  st.grad_scale = grad_scale;
  std::memcpy(stepb.mapped(), &st, sizeof st);
  dev.upload(wb, w);
  dev.upload(gb, g);
  dev.upload(mb, m);
  dev.upload(vb, v);
  const double norm = ref::grad_norm({g});
  ops::GradNormResult r;
  r.sum_squares = float(norm * norm);
  r.norm = float(norm);
  dev.upload(normb, std::vector<ops::GradNormResult>{r});
  try {
    Recorder rec(dev);
    ops::adam(dev, rec,
              {.params = wb,
               .grads = gb,
               .m = mb,
               .v = vb,
               .step = stepb,
               .grad_norm = normb,
               .n = n,
               .options = o,
               .config = candidate});
    if (sabotage && sabotage(ops::describe(candidate)))
      rec.fill(wb.ref().slice(0, 4), ref::k_wrong_bits);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  ref::AdamState want{{w.begin(), w.end()}, {m.begin(), m.end()}, {v.begin(), v.end()}};
  ref::adam_step(want, g, o, step, grad_scale, 1.0, norm);
  // The shader tests' tolerances (tests/shaders/test_adam.cpp).
  std::string why = ref::first_wrong("w", dev.download<float>(wb, n), want.w, 1e-6, 1e-5);
  if (why.empty()) why = ref::first_wrong("m", dev.download<float>(mb, n), want.m, 1e-7, 1e-5);
  if (why.empty()) why = ref::first_wrong("v", dev.download<float>(vb, n), want.v, 1e-12, 1e-5);
  return why;
}

}  // namespace vkf::tune
