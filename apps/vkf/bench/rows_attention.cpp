// Fused attention forward and backward at Transformer-base heads (8 x 64), on the kernel path the
// engine picks for the device (rows on CPU devices, tiled on GPUs). Checked: whole heads of the
// timed output against the double-precision reference on the same inputs (the first and the
// last head; only the first when dropout is on, whose mask the reference draws for head 0's
// element numbers).
#include <cstring>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/attention.h"
#include "engine/step_scalars.h"
#include "reference/attention.h"

namespace vkf::bench {
namespace {

constexpr uint32_t k_seed = 1234, k_step = 1;

std::vector<double> slice(const std::vector<float>& v, size_t first, size_t count) {
  return {v.begin() + int64_t(first), v.begin() + int64_t(first + count)};
}

void attention_row(Context& cx, Row& row, const AttentionShape& s, bool backward) {
  Device& dev = cx.dev;
  const uint32_t heads = k_attention_heads, d = k_attention_head_dim;
  const uint64_t n = uint64_t{s.batch} * heads * s.len * d,
                 rows = uint64_t{s.batch} * heads * s.len;
  const std::vector<float> q = uniform(cx.rng, n), k = uniform(cx.rng, n), v = uniform(cx.rng, n),
                           d_o = uniform(cx.rng, n);
  Buffer bq = dev.allocate(n * 4, "q"), bk = dev.allocate(n * 4, "k"),
         bv = dev.allocate(n * 4, "v");
  Buffer bo = dev.allocate(n * 4, "o"), bdo = dev.allocate(n * 4, "d_o");
  Buffer bdq = dev.allocate(n * 4, "d_q"), bdk = dev.allocate(n * 4, "d_k");
  Buffer bdv = dev.allocate(n * 4, "d_v");
  Buffer lse = dev.allocate(rows * 4, "lse"), delta = dev.allocate(rows * 4, "delta");
  Buffer scalars = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.seed = k_seed;
  st.step = k_step;
  std::memcpy(scalars.mapped(), &st, sizeof st);
  dev.upload(bq, q);
  dev.upload(bk, k);
  dev.upload(bv, v);
  dev.upload(bdo, d_o);

  ops::AttentionArgs a;
  a.batch = s.batch, a.heads = heads, a.len_q = s.len, a.len_k = s.len, a.d_k = d, a.d_v = d;
  a.q = bq, a.k = bk, a.v = bv, a.o = bo, a.lse = lse, a.scalars = scalars;
  a.causal = s.causal;
  a.dropout_p = s.dropout ? 0.1f : 0.0f;
  if (backward) {  // the backward reads the forward's o and lse
    Recorder init(dev);
    ops::attention_forward(dev, init, a);
    init.finish().run();
  }
  Recorder rec(dev, timed_recorder(dev));
  if (backward) {
    ops::AttentionBackwardArgs b{a, bdo, bdq, bdk, bdv, delta, {}, {}};
    ops::attention_backward(dev, rec, b);
    if (cx.sabotage(row.id)) rec.fill(bdq.ref().slice(0, 4), k_wrong_bits);
  } else {
    ops::attention_forward(dev, rec, a);
    if (cx.sabotage(row.id)) rec.fill(bo.ref().slice(0, 4), k_wrong_bits);
  }
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  ref::AttentionShape rs;
  rs.len_q = rs.len_k = int(s.len);
  rs.d_k = rs.d_v = int(d);
  rs.causal = s.causal;
  rs.dropout_p = a.dropout_p;
  rs.seed = k_seed, rs.step = k_step, rs.tensor_id = a.dropout_tensor;
  std::vector<uint32_t> checked{0};
  if (!s.dropout) checked.push_back(s.batch * heads - 1);
  const size_t head = size_t{s.len} * d;
  std::vector<Comparison> cmps;
  if (backward) {
    const std::vector<float> gq = dev.download<float>(bdq, n), gk = dev.download<float>(bdk, n),
                             gv = dev.download<float>(bdv, n);
    Comparison cq("d_q"), ck("d_k"), cv("d_v");
    for (uint32_t bh : checked) {
      const size_t at = bh * head;
      const ref::AttentionGrads g = ref::attention_backward(
          rs, slice(q, at, head), slice(k, at, head), slice(v, at, head), slice(d_o, at, head));
      for (size_t i = 0; i < head; ++i) {
        cq.add(gq[at + i], g.d_q[i], g.d_q[i], 5e-4, 5e-3);
        ck.add(gk[at + i], g.d_k[i], g.d_k[i], 5e-4, 5e-3);
        cv.add(gv[at + i], g.d_v[i], g.d_v[i], 5e-4, 5e-3);
      }
    }
    cmps = {cq, ck, cv};
  } else {
    const std::vector<float> o = dev.download<float>(bo, n), l = dev.download<float>(lse, rows);
    Comparison co("o"), cl("lse");
    for (uint32_t bh : checked) {
      const ref::AttentionForward f = ref::attention_forward(
          rs, slice(q, bh * head, head), slice(k, bh * head, head), slice(v, bh * head, head));
      for (size_t i = 0; i < head; ++i) co.add(o[bh * head + i], f.o[i], f.o[i], 1e-4, 1e-3);
      for (size_t i = 0; i < s.len; ++i) cl.add(l[bh * s.len + i], f.lse[i], f.lse[i], 1e-4, 1e-4);
    }
    cmps = {co, cl};
  }
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
