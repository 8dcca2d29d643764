#include "tune/row_checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/error.h"
#include "engine/ops/adam.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/loss.h"
#include "engine/ops/topk.h"
#include "engine/step_scalars.h"
#include "reference/layer_norm.h"
#include "reference/loss.h"
#include "reference/optim.h"
#include "reference/stored.h"
#include "reference/topk.h"

namespace vkf::tune {
namespace {

constexpr double k_eps = 1e-6;

std::vector<double> doubles(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

std::string check_layer_norm_shape(Device& dev, const ops::LayerNormConfig& c, DType t,
                                   uint32_t rows, uint32_t d, bool wrong) {
  std::mt19937 rng(rows * 977 + d);
  const size_t n = size_t(rows) * d;
  const std::vector<float> x = ref::random_stored(rng, n, t, -2, 2),
                           dy = ref::random_stored(rng, n, t),
                           gamma = ref::random_stored(rng, d, DType::f32, 0.5f, 1.5f),
                           beta = ref::random_stored(rng, d, DType::f32);
  const uint32_t es = dtype_bytes(t);
  Buffer xb = dev.allocate(n * es, "tuner check x"), yb = dev.allocate(n * es, "tuner check y"),
         dyb = dev.allocate(n * es, "tuner check dy"), dxb = dev.allocate(n * es, "tuner check dx"),
         gb = dev.allocate(d * 4, "tuner check gamma"),
         bb = dev.allocate(d * 4, "tuner check beta"),
         meanb = dev.allocate(rows * 4, "tuner check mean"),
         rstdb = dev.allocate(rows * 4, "tuner check rstd"),
         dgb = dev.allocate(d * 4, "tuner check dgamma"),
         dbb = dev.allocate(d * 4, "tuner check dbeta"),
         scratch = dev.allocate(ops::layer_norm_backward_scratch_bytes(rows, d), "tuner scratch");
  ref::upload_stored(dev, xb, x, t);
  ref::upload_stored(dev, dyb, dy, t);
  dev.upload(gb, gamma);
  dev.upload(bb, beta);
  ref::poison(dev, yb, n, t);
  ref::poison(dev, dxb, n, t);
  for (const Buffer* b : {&meanb, &rstdb}) ref::poison(dev, *b, rows, DType::f32);
  for (const Buffer* b : {&dgb, &dbb}) ref::poison(dev, *b, d, DType::f32);

  ops::LayerNormForwardArgs f;
  f.dtype = t, f.x = xb, f.gamma = gb, f.beta = bb, f.y = yb, f.mean = meanb, f.rstd = rstdb;
  f.rows = rows, f.d = d, f.eps = float(k_eps);
  f.workgroup_size = c.workgroup_size, f.reduce = c.reduce, f.reads = c.reads;
  ops::LayerNormBackwardArgs b;
  b.dtype = t, b.dy = dyb, b.h = xb, b.gamma = gb, b.mean = meanb, b.rstd = rstdb, b.dx = dxb;
  b.dgamma = dgb, b.dbeta = dbb, b.scratch = scratch, b.rows = rows, b.d = d;
  b.workgroup_size = c.workgroup_size, b.reduce = c.reduce, b.reads = c.reads;
  try {
    Recorder rec(dev);
    ops::layer_norm_forward(dev, rec, f);
    ops::layer_norm_backward(dev, rec, b);
    if (wrong) rec.fill(yb.ref().slice(0, 4), ref::k_wrong_bits);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  const auto want =
      ref::layer_norm_forward(doubles(x), {}, {}, doubles(gamma), doubles(beta), rows, d, k_eps);
  const auto grads =
      ref::layer_norm_backward(doubles(dy), doubles(x), {}, {}, doubles(gamma), rows, d, k_eps);
  // The shader tests' tolerances (tests/shaders/test_layer_norm.cpp).
  const bool half = t == DType::f16;
  std::string why = ref::first_wrong("y", ref::download_stored(dev, yb, n, t), want.y,
                                     half ? 1e-4 : 2e-5, half ? 1e-3 : 1e-4);
  if (why.empty())
    why = ref::first_wrong("mean", dev.download<float>(meanb, rows), want.mean, 1e-5, 1e-5);
  if (why.empty())
    why = ref::first_wrong("rstd", dev.download<float>(rstdb, rows), want.rstd, 1e-5, 1e-4);
  if (why.empty())
    why = ref::first_wrong("dx", ref::download_stored(dev, dxb, n, t), grads.dx, half ? 1e-4 : 5e-5,
                           half ? 1e-3 : 1e-4);
  if (why.empty())
    why = ref::first_wrong("dgamma", dev.download<float>(dgb, d), grads.dgamma, 1e-4, 1e-4);
  if (why.empty())
    why = ref::first_wrong("dbeta", dev.download<float>(dbb, d), grads.dbeta, 1e-4, 1e-4);
  if (!why.empty()) why += " (" + std::to_string(rows) + " rows of " + std::to_string(d) + ")";
  return why;
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

std::string check_cross_entropy(Device& dev, const ops::RowKernelConfig& candidate,
                                const ops::CrossEntropyProblem& p, const Sabotage& sabotage) {
  const DType t = p.dtype;
  const uint32_t rows = 9, vocab = std::min(p.vocab, 3000u) | 1u;
  const float eps = 0.1f, grad_scale = 0.37f;
  const int32_t pad = 0;
  std::mt19937 rng(vocab);
  const size_t n = size_t(rows) * vocab;
  const std::vector<float> logits = ref::random_stored(rng, n, t, -4, 4);
  std::vector<int32_t> targets(rows);
  std::uniform_int_distribution<int32_t> pick(1, int32_t(vocab) - 1);
  for (int32_t& x : targets) x = pick(rng);
  targets[3] = pad;  // a padding row: zeros
  const uint32_t es = dtype_bytes(t);
  Buffer lb = dev.allocate(n * es, "tuner check logits"),
         db = dev.allocate(n * es, "tuner check dlogits"),
         tb = dev.allocate(rows * 4, "tuner check targets"),
         lossb = dev.allocate(rows * 4, "tuner check row_loss"),
         logpb = dev.allocate(rows * 4, "tuner check row_logp"),
         step = dev.allocate(sizeof(StepScalars), "tuner check step", MemoryKind::host);
  StepScalars st;
  st.grad_scale = grad_scale;
  std::memcpy(step.mapped(), &st, sizeof st);
  ref::upload_stored(dev, lb, logits, t);
  dev.upload(tb, targets);
  ref::poison(dev, db, n, t);
  ref::poison(dev, lossb, rows, DType::f32);
  ref::poison(dev, logpb, rows, DType::f32);
  ops::CrossEntropyArgs a;
  a.dtype = t, a.logits = lb, a.targets = tb, a.step = step, a.row_loss = lossb;
  a.row_logp = logpb, a.dlogits = db, a.rows = rows, a.vocab = vocab, a.pad_id = pad;
  a.label_smoothing = eps, a.config = candidate;
  try {
    Recorder rec(dev);
    ops::cross_entropy(dev, rec, a);
    if (sabotage && sabotage(ops::describe(candidate)))
      rec.fill(db.ref().slice(0, 4), ref::k_wrong_bits);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  const ref::CrossEntropyResult want =
      ref::cross_entropy(logits, targets, rows, vocab, pad, eps, grad_scale);
  // The shader tests' tolerances (tests/shaders/test_loss.cpp).
  std::string why =
      ref::first_wrong("row loss", dev.download<float>(lossb, rows), want.row_loss, 2e-5, 1e-5);
  if (why.empty())
    why =
        ref::first_wrong("row log p", dev.download<float>(logpb, rows), want.row_logp, 2e-5, 1e-5);
  if (why.empty())
    why = ref::first_wrong("dlogits", ref::download_stored(dev, db, n, t), want.dlogits,
                           1e-6 * grad_scale, t == DType::f16 ? 1e-3 : 1e-4);
  if (!why.empty()) why += " (" + std::to_string(rows) + " rows of " + std::to_string(vocab) + ")";
  return why;
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
