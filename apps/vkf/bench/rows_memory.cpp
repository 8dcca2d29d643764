// The memory-bound ops a training step runs besides matmul and attention: LayerNorm forward and
// backward (post-LN, residual + dropout fused), label-smoothed cross-entropy with its gradient,
// and Adam. Rates in GB/s count the bytes each op must move once (bench/bench_norm.cpp and
// bench/bench_loss_adam.cpp count the same way); the fraction is of the device's shader copy.
#include <algorithm>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/layer_norm.h"
#include "reference/adam_case.h"
#include "reference/cross_entropy_case.h"
#include "reference/layer_norm_case.h"

namespace vkf::bench {
namespace {

constexpr uint32_t k_seed = 1234;

uint64_t buffer_limit(const DeviceInfo& info) {
  return std::min(info.max_storage_buffer_range, info.max_buffer_bytes);
}

// Set up and checked through the LayerNorm harness (reference/layer_norm_case.h), at the
// shader tests' tolerances. The forward row times the forward alone, then runs the backward
// once untimed, so that the harness compares every output; the backward row runs the forward
// untimed first (the backward reads its h, mean and rstd) and times the backward.
void layer_norm_row(Context& cx, Row& row, uint32_t rows, DType t, bool backward) {
  Device& dev = cx.dev;
  if (t == DType::f16 && !dev.info().storage16)
    throw Refused("no 16-bit storage (storageBuffer16BitAccess)");
  ref::LayerNormCase c;
  c.rows = rows, c.d = k_d_model, c.dtype = t;
  c.residual = true, c.dropout = 0.1f;  // dropout on the sublayer output, as the model trains
  c.seed = k_seed, c.step = 1;
  const ref::LayerNormRun run(dev, c, cx.rng);
  const ops::LayerNormForwardArgs f = run.forward_args();
  const ops::LayerNormBackwardArgs b = run.backward_args();
  if (backward) {
    Recorder init(dev);
    ops::layer_norm_forward(dev, init, f);
    init.finish().run();
  }
  Recorder rec(dev, timed_recorder(dev));
  if (backward)
    ops::layer_norm_backward(dev, rec, b);
  else
    ops::layer_norm_forward(dev, rec, f);
  if (cx.sabotage(row.id)) rec.fill((backward ? b.dx : f.y).slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);
  if (!backward) {
    Recorder rest(dev);
    ops::layer_norm_backward(dev, rest, b);
    rest.finish().run();
  }
  set_check(row, run.compare(ref::layer_norm_tolerance(t)),
            "every element of every output, the timed one's included");
  const size_t n = size_t{rows} * k_d_model;
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), 4.0 * double(dtype_bytes(t)) * double(n),
             "GB/s", Basis::copy);
}

// In place, as the trainer runs it, through the cross-entropy harness
// (reference/cross_entropy_case.h): 16 sampled rows of the timed output (rows are independent)
// against the reference, at the shader tests' tolerances.
void cross_entropy_row(Context& cx, Row& row, uint32_t asked_rows, uint32_t vocab) {
  Device& dev = cx.dev;
  ref::CrossEntropyCase c;
  // Fewer rows where [rows, V] exceeds the largest buffer (lavapipe: 128 MiB, 906 rows at 37000).
  c.rows = uint32_t(std::min<uint64_t>(
      asked_rows, std::max<uint64_t>(1, buffer_limit(dev.info()) / (uint64_t{vocab} * 4))));
  c.vocab = vocab, c.pad_id = 0, c.label_smoothing = 0.1f;
  c.grad_scale = 1.0f / float(k_tokens);
  c.grad = ref::CrossEntropyCase::Grad::in_place;
  // Real targets on every row, no padding: the kernel's whole work on each.
  ref::CrossEntropyInputs in;
  in.logits = uniform(cx.rng, size_t{c.rows} * vocab, -4.0f, 4.0f);
  in.targets.resize(c.rows);
  for (uint32_t r = 0; r < c.rows; ++r) in.targets[r] = int32_t(4 + (r * 7919u) % (vocab - 4));
  const ref::CrossEntropyRun run(dev, c, std::move(in));
  Recorder rec(dev, timed_recorder(dev));
  run.record(rec);
  if (cx.sabotage(row.id)) run.corrupt(rec);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);  // compared before a second run reads the gradient
  set_check(row,
            run.compare_rows(ref::cross_entropy_tolerance(DType::f32, c.grad_scale),
                             sample_indices(cx.rng, c.rows, 16)),
            std::to_string(c.rows) + " rows, 16 sampled rows of the timed output");
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), 12.0 * c.rows * double(vocab), "GB/s",
             Basis::copy);
}

// Through the Adam harness (reference/adam_case.h): a late step (100) of a model's moments,
// 4096 parameters sampled from the timed output (the update is element-wise), w held to the
// size of its update (about 1e-5 of w here).
void adam_row(Context& cx, Row& row, uint32_t asked) {
  Device& dev = cx.dev;
  ref::AdamCase c;
  c.n = uint32_t(std::min<uint64_t>(asked, buffer_limit(dev.info()) / 4));
  c.step = 100, c.grad_scale = 1.0f / float(k_tokens);
  c.m_range = 1e-3f, c.v_range = 1e-6f;
  const ref::AdamRun run(dev, c, cx.rng);
  Recorder rec(dev, timed_recorder(dev));
  run.record(rec);
  if (cx.sabotage(row.id)) run.corrupt(rec);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);  // compared before a second step moves w, m and v on
  set_check(row, run.compare(ref::adam_tolerance(), sample_indices(cx.rng, c.n, 4096)),
            std::to_string(c.n) + " parameters, 4096 sampled from the timed output");
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), 28.0 * c.n, "GB/s", Basis::copy);
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
