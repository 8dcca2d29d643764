// Fused attention forward and backward at Transformer-base heads (8 x 64), on the kernel path the
// engine picks for the device (rows on CPU devices, tiled on GPUs), set up and checked through
// the attention harness (reference/attention_case.h): whole heads of the timed output against
// the double-precision reference on the same inputs (the first and the last head; only the
// first when dropout is on, whose mask the one-head reference draws for head 0's element
// numbers), at the shader tests' tolerances.
#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/attention.h"
#include "reference/attention_case.h"

namespace vkf::bench {
namespace {

constexpr uint32_t k_seed = 1234, k_step = 1;

void attention_row(Context& cx, Row& row, const AttentionShape& s, bool backward) {
  Device& dev = cx.dev;
  const uint32_t heads = k_attention_heads, d = k_attention_head_dim;
  ref::AttentionCase c;
  c.s.batch = int(s.batch), c.s.heads = int(heads), c.s.len_q = c.s.len_k = int(s.len);
  c.s.d_k = c.s.d_v = int(d), c.s.causal = s.causal;
  c.s.dropout_p = s.dropout ? 0.1f : 0.0f;
  c.s.seed = k_seed, c.s.step = k_step;
  c.qk_range = 1.0f;
  const ref::AttentionRun run(dev, c, cx.rng);
  const ops::AttentionBackwardArgs g = run.backward_args();
  {  // Outputs poisoned, outside the timing; the backward reads the forward's O and LSE.
    Recorder init(dev);
    run.poison(init);
    if (backward) ops::attention_forward(dev, init, g.fwd);
    init.finish().run();
  }
  Recorder rec(dev, timed_recorder(dev));
  const auto kernel = backward ? ops::AttentionKernel::backward_q : ops::AttentionKernel::forward;
  if (backward)
    ops::attention_backward(dev, rec, g);
  else
    ops::attention_forward(dev, rec, g.fwd);
  if (cx.sabotage(row.id)) run.corrupt(rec, kernel);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  std::vector<uint32_t> checked{0};
  if (!s.dropout) checked.push_back(s.batch * heads - 1);
  const ref::AttentionTolerance tol = ref::attention_tolerance(DType::f32);
  const std::vector<Comparison> cmps =
      backward ? run.compare_backward(tol, checked) : run.compare_forward(tol, checked);
  const ops::AttentionTiles tiles = ops::attention_default_tiles(
      dev.info(), backward ? ops::AttentionKernel::backward_kv : ops::AttentionKernel::forward, d,
      d);
  set_check(row, cmps,
            std::string(tiles.path == ops::AttentionPath::rows ? "rows" : "tiled") + " kernels, " +
                std::to_string(checked.size()) + " whole heads of the timed output");
  const double flops = 4.0 * s.batch * heads * double(s.len) * s.len * d * (backward ? 2.5 : 1.0);
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), flops, "GFLOP/s", Basis::fp32_fma);
}

}  // namespace

std::vector<RowSpec> attention_rows(Suite suite) {
  std::vector<RowSpec> rows;
  for (const AttentionShape& s : attention_shapes()) {
    if (s.suite > suite) continue;
    const std::string dims = std::to_string(s.batch) + "x" + std::to_string(s.len);
    const std::string mask =
        std::string(s.causal ? ", causal" : "") + (s.dropout ? ", dropout 0.1" : "");
    const std::string tag = std::string(s.causal ? "/causal" : "") + (s.dropout ? "/dropout" : "");
    for (bool backward : {false, true}) {
      const char* dir = backward ? "backward" : "forward";
      rows.push_back({std::string("attention/") + dir + "/" + dims + tag, "attention",
                      std::string("attention ") + dir + ", batch " + std::to_string(s.batch) +
                          " x len " + std::to_string(s.len) + ", 8 heads of 64" + mask,
                      [s, backward](Context& cx, Row& r) { attention_row(cx, r, s, backward); }});
    }
  }
  return rows;
}

}  // namespace vkf::bench
