// The memory-bound ops a training step runs besides matmul and attention: LayerNorm forward and
// backward (post-LN, residual + dropout fused), label-smoothed cross-entropy with its gradient,
// and Adam. Rates in GB/s count the bytes each op must move once (bench/bench_norm.cpp and
// bench/bench_loss_adam.cpp count the same way); the fraction is of the device's shader copy.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/adam.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/loss.h"
#include "engine/step_scalars.h"
#include "reference/layer_norm.h"
#include "reference/loss.h"
#include "reference/optim.h"

namespace vkf::bench {
namespace {

constexpr uint32_t k_seed = 1234;

Buffer step_scalars(Device& dev, uint32_t step, float grad_scale) {
  Buffer b = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.seed = k_seed;
  st.step = step;
  st.grad_scale = grad_scale;
  std::memcpy(b.mapped(), &st, sizeof st);
  return b;
}

// A [n] activation stored as `t`: uploaded, and what the kernel reads (fp16-rounded) returned.
std::vector<float> stored(Device& dev, const BufferRef& b, std::vector<float> v, DType t) {
  ref::upload_stored(dev, b, v, t);
  return ref::stored(std::move(v), t);
}

uint64_t buffer_limit(const DeviceInfo& info) {
  return std::min(info.max_storage_buffer_range, info.max_buffer_bytes);
}

void layer_norm_row(Context& cx, Row& row, uint32_t rows, DType t, bool backward) {
  Device& dev = cx.dev;
  if (t == DType::f16 && !dev.info().storage16)
    throw Refused("no 16-bit storage (storageBuffer16BitAccess)");
  const uint32_t d = k_d_model;
  const size_t n = size_t{rows} * d, e = dtype_bytes(t);
  const float p = 0.1f;  // dropout on the sublayer output, as the model trains
  Buffer x = dev.allocate(n * e, "x"), s = dev.allocate(n * e, "s"), dy = dev.allocate(n * e, "dy");
  Buffer gamma = dev.allocate(d * 4, "gamma"), beta = dev.allocate(d * 4, "beta");
  Buffer y = dev.allocate(n * e, "y"), h = dev.allocate(n * e, "h");
  Buffer dx = dev.allocate(n * e, "dx"), ds = dev.allocate(n * e, "ds");
  Buffer mean = dev.allocate(rows * 4, "mean"), rstd = dev.allocate(rows * 4, "rstd");
  Buffer dg = dev.allocate(d * 4, "dgamma"), db = dev.allocate(d * 4, "dbeta");
  Buffer scratch = dev.allocate(ops::layer_norm_backward_scratch_bytes(rows, d), "scratch");
  Buffer step = step_scalars(dev, 1, 1.0f);
  const std::vector<float> xv = stored(dev, x, uniform(cx.rng, n, 2.0f, 4.0f), t);
  const std::vector<float> sv = stored(dev, s, uniform(cx.rng, n), t);
  const std::vector<float> dyv = stored(dev, dy, uniform(cx.rng, n), t);
  const std::vector<float> gv = uniform(cx.rng, d, 0.5f, 1.5f), bv = uniform(cx.rng, d);
  dev.upload(gamma, gv);
  dev.upload(beta, bv);

  ops::LayerNormForwardArgs f;
  f.dtype = t;
  f.x = x, f.s = s, f.gamma = gamma, f.beta = beta, f.y = y, f.h = h, f.mean = mean;
  f.rstd = rstd, f.step = step, f.rows = rows, f.d = d, f.dropout = p;
  ops::LayerNormBackwardArgs b;
  b.dtype = t;
  b.dy = dy, b.h = h, b.gamma = gamma, b.mean = mean, b.rstd = rstd, b.dx = dx, b.ds = ds;
  b.dgamma = dg, b.dbeta = db, b.scratch = scratch, b.step = step, b.rows = rows, b.d = d;
  b.dropout = p;
  if (backward) {  // the backward reads the forward's h, mean and rstd
    Recorder init(dev);
    ops::layer_norm_forward(dev, init, f);
    init.finish().run();
  }
  Recorder rec(dev, timed_recorder(dev));
  if (backward)
    ops::layer_norm_backward(dev, rec, b);
  else
    ops::layer_norm_forward(dev, rec, f);
  if (cx.sabotage(row.id)) rec.fill((backward ? dx : y).ref().slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  // As tests/shaders/test_layer_norm.cpp checks it: h = x + mask * s is one rounding (to fp32,
  // or to f16) away from the exact sum, and a row whose values nearly agree magnifies that by
  // rstd; so h is checked against the exact sum, and the normalisation and its gradients
  // against the reference evaluated at the kernel's own h.
  const std::vector<double> mask = ref::dropout_mask(uint32_t(n), p, k_seed, 1, f.tensor_id);
  const double eps = f.eps;
  const bool half = t == DType::f16;
  const std::vector<double> hv = ref::to_double(ref::download_stored(dev, h, n, t));
  std::vector<Comparison> cmps;
  if (backward) {
    ref::LayerNormGrads g =
        ref::layer_norm_backward(ref::to_double(dyv), hv, {}, {}, ref::to_double(gv), rows, d, eps);
    g.ds = g.dx;  // ds = dh * mask, the chain rule through h = x + mask * s
    for (size_t i = 0; i < n; ++i) g.ds[i] *= mask[i];
    Comparison cdx("dx"), cds("ds"), cg("dgamma"), cb("dbeta");
    cdx.add_all(ref::download_stored(dev, dx, n, t), g.dx, half ? 1e-3 : 1e-4, half ? 4e-3 : 1e-3);
    cds.add_all(ref::download_stored(dev, ds, n, t), g.ds, half ? 1e-3 : 1e-4, half ? 4e-3 : 1e-3);
    cg.add_all(dev.download<float>(dg, d), g.dgamma, 2e-3, 1e-3);
    cb.add_all(dev.download<float>(db, d), g.dbeta, 2e-3, 1e-3);
    cmps = {cdx, cds, cg, cb};
  } else {
    const ref::LayerNormForward exact =
        ref::layer_norm_forward(ref::to_double(xv), ref::to_double(sv), mask, ref::to_double(gv),
                                ref::to_double(bv), rows, d, eps);
    const ref::LayerNormForward want =
        ref::layer_norm_forward(hv, {}, {}, ref::to_double(gv), ref::to_double(bv), rows, d, eps);
    Comparison cy("y"), ch("h");
    cy.add_all(ref::download_stored(dev, y, n, t), want.y, half ? 1e-3 : 1e-4, half ? 4e-3 : 1e-3);
    ch.add_all(ref::download_stored(dev, h, n, t), exact.h, half ? 1e-4 : 1e-6, half ? 2e-3 : 1e-5);
    cmps = {cy, ch};
  }
  set_check(row, cmps, "every element of the timed output");
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), 4.0 * double(e) * double(n), "GB/s",
             Basis::copy);
}

void cross_entropy_row(Context& cx, Row& row, uint32_t asked_rows, uint32_t vocab) {
  Device& dev = cx.dev;
  // Fewer rows where [rows, V] exceeds the largest buffer (lavapipe: 128 MiB, 906 rows at 37000).
  const uint32_t rows = uint32_t(std::min<uint64_t>(
      asked_rows, std::max<uint64_t>(1, buffer_limit(dev.info()) / (uint64_t{vocab} * 4))));
  const float grad_scale = 1.0f / float(k_tokens);
  const std::vector<float> logits = uniform(cx.rng, size_t{rows} * vocab, -4.0f, 4.0f);
  std::vector<int32_t> targets(rows);
  for (uint32_t r = 0; r < rows; ++r) targets[r] = int32_t(4 + (r * 7919u) % (vocab - 4));
  Buffer bl = dev.allocate(size_t{rows} * vocab * 4, "logits");
  Buffer bt = dev.allocate(rows * 4, "targets");
  Buffer loss = dev.allocate(rows * 4, "row loss"), logp = dev.allocate(rows * 4, "row logp");
  Buffer step = step_scalars(dev, 1, grad_scale);
  dev.upload(bl, logits);
  dev.upload(bt, targets);
  Recorder rec(dev, timed_recorder(dev));
  ops::cross_entropy(dev, rec,
                     {.logits = bl,
                      .targets = bt,
                      .step = step,
                      .row_loss = loss,
                      .row_logp = logp,
                      .dlogits = bl,  // in place, as the trainer runs it
                      .rows = rows,
                      .vocab = vocab,
                      .pad_id = 0,
                      .label_smoothing = 0.1f});
  if (cx.sabotage(row.id)) rec.fill(loss.ref().slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  // 16 sampled rows (rows are independent): loss, log p(target) and the whole gradient row.
  const std::vector<uint32_t> picked = sample_indices(cx.rng, rows, 16);
  std::vector<float> sub;
  std::vector<int32_t> sub_t;
  for (uint32_t r : picked) {
    sub.insert(sub.end(), logits.begin() + int64_t(size_t{r} * vocab),
               logits.begin() + int64_t(size_t{r + 1} * vocab));
    sub_t.push_back(targets[r]);
  }
  const ref::CrossEntropyResult want =
      ref::cross_entropy(sub, sub_t, uint32_t(picked.size()), vocab, 0, 0.1, grad_scale);
  const std::vector<float> got_loss = dev.download<float>(loss, rows),
                           got_logp = dev.download<float>(logp, rows);
  Comparison cl("row loss"), cp("row log p"), cg("dlogits");
  for (size_t i = 0; i < picked.size(); ++i) {
    const uint32_t r = picked[i];
    cl.add(got_loss[r], want.row_loss[i], want.row_loss[i], 1e-4, 1e-4);
    cp.add(got_logp[r], want.row_logp[i], want.row_logp[i], 1e-4, 1e-4);
    const std::vector<float> g =
        dev.download<float>(bl.ref().slice(uint64_t{r} * vocab * 4, uint64_t{vocab} * 4), vocab);
    for (uint32_t j = 0; j < vocab; ++j) {
      const double w = want.dlogits[i * vocab + j];
      cg.add(g[j], w, w, 1e-5 * grad_scale, 1e-3);
    }
  }
  set_check(row, {cl, cp, cg}, std::to_string(rows) + " rows, 16 sampled rows of the timed output");
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), 12.0 * rows * double(vocab), "GB/s",
             Basis::copy);
}

void adam_row(Context& cx, Row& row, uint32_t asked) {
  Device& dev = cx.dev;
  const uint32_t n = uint32_t(std::min<uint64_t>(asked, buffer_limit(dev.info()) / 4));
  const float grad_scale = 1.0f / float(k_tokens);
  const uint32_t step_number = 100;
  std::vector<float> w = uniform(cx.rng, n), g = uniform(cx.rng, n),
                     m = uniform(cx.rng, n, -1e-3f, 1e-3f), v = uniform(cx.rng, n, 0.0f, 1e-6f);
  Buffer bw = dev.allocate(n * 4ull, "w"), bg = dev.allocate(n * 4ull, "g");
  Buffer bm = dev.allocate(n * 4ull, "m"), bv = dev.allocate(n * 4ull, "v");
  Buffer step = step_scalars(dev, step_number, grad_scale), norm = dev.allocate(16, "norm");
  dev.upload(bw, w);
  dev.upload(bg, g);
  dev.upload(bm, m);
  dev.upload(bv, v);
  dev.upload(norm, std::vector<uint32_t>{0, 0, 0, 0});  // finite gradient, no clipping
  const ops::AdamOptions o;
  Recorder rec(dev, timed_recorder(dev));
  ops::adam(dev, rec,
            {.params = bw,
             .grads = bg,
             .m = bm,
             .v = bv,
             .step = step,
             .grad_norm = norm,
             .n = n,
             .options = o});
  if (cx.sabotage(row.id)) rec.fill(bw.ref().slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  // 4096 sampled parameters (the update is element-wise); w is compared on the size of its
  // update, which is ~1e-5 of w here.
  const std::vector<uint32_t> picked = sample_indices(cx.rng, n, 4096);
  ref::AdamState st;
  std::vector<float> sub_g;
  for (uint32_t i : picked) {
    st.w.push_back(w[i]), st.m.push_back(m[i]), st.v.push_back(v[i]);
    sub_g.push_back(g[i]);
  }
  ref::adam_step(st, sub_g, o, step_number, grad_scale, 1.0, 0.0);
  const std::vector<float> gw = dev.download<float>(bw, n), gm = dev.download<float>(bm, n),
                           gv = dev.download<float>(bv, n);
  Comparison cw("w"), cm("m"), cv("v");
  for (size_t j = 0; j < picked.size(); ++j) {
    const uint32_t i = picked[j];
    cw.add(gw[i], st.w[j], st.w[j] - w[i], 2.5e-7, 1e-3);
    cm.add(gm[i], st.m[j], st.m[j], 1e-12, 1e-5);
    cv.add(gv[i], st.v[j], st.v[j], 1e-15, 1e-5);
  }
  set_check(row, {cw, cm, cv},
            std::to_string(n) + " parameters, 4096 sampled from the timed output");
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), 28.0 * n, "GB/s", Basis::copy);
}

}  // namespace

std::vector<RowSpec> memory_rows(Suite suite) {
  std::vector<RowSpec> rows;
  const std::vector<uint32_t> ln_rows = suite == Suite::full
                                            ? std::vector<uint32_t>{k_tokens, k_tokens_large}
                                            : std::vector<uint32_t>{k_tokens};
  for (uint32_t r : ln_rows)
    for (DType t : {DType::f32, DType::f16}) {
      if (t == DType::f16 && suite == Suite::quick) continue;
      for (bool bwd : {false, true}) {
        const std::string dims = std::to_string(r) + "x" + std::to_string(k_d_model);
        rows.push_back(
            {std::string("layer_norm/") + (bwd ? "backward/" : "forward/") + dtype_name(t) + "/" +
                 dims,
             "memory",
             std::string("LayerNorm ") + (bwd ? "backward" : "forward") + " " +
                 (t == DType::f16 ? "f16 storage" : "f32") + " " + dims +
                 " (residual + dropout fused)",
             [r, t, bwd](Context& cx, Row& row) { layer_norm_row(cx, row, r, t, bwd); }});
      }
    }
  const uint32_t vocab = suite == Suite::quick ? k_train_vocab : k_vocab_base;
  rows.push_back({"cross_entropy/" + std::to_string(k_tokens) + "x" + std::to_string(vocab),
                  "memory",
                  "cross-entropy with gradient, " + std::to_string(k_tokens) + " x " +
                      std::to_string(vocab) + " (label smoothing 0.1, in place)",
                  [vocab](Context& cx, Row& row) { cross_entropy_row(cx, row, k_tokens, vocab); }});
  const uint32_t params = suite == Suite::quick ? k_adam_params_small : k_adam_params_large;
  rows.push_back({"adam/" + std::to_string(params), "memory",
                  "Adam, " + std::to_string(params) +
                      " parameters (fewer where a buffer cannot "
                      "hold them)",
                  [params](Context& cx, Row& row) { adam_row(cx, row, params); }});
  return rows;
}

}  // namespace vkf::bench
