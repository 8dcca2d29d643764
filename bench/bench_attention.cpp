// Fused attention forward and backward at Transformer-base shapes (8 heads, d_k 64): batch 64 x
// len 64 (4096 tokens) and batch 16 x len 256. FLOPs counted as 4 * b * h * lq * lk * d for the
// forward (Q K^T and P V) and 2.5x that for the backward (recomputed Q K^T, dO V^T, dV, dK, dQ).
// Each shape runs on both kernel paths (ops::AttentionPath): path 1 = tiled (shared-memory
// tiles, GPUs), path 2 = rows (registers and subgroup shuffles, the default on CPU devices).
// VKF_ATTENTION_TILES="workgroup,block_q,block_k" forces the tiled path's tiles and
// VKF_ATTENTION_ROWS=n the rows path's rows per lane. Batch 392 x len 64 is the 25,000-token
// batch (25,088 tokens).
// Counters: GFLOP/s, ratio_peak (against the device's measured FMA rate, bench/bench_peak.h) and
// x_matmul_time = the time taken / the time the same FLOPs take in the device's own fp32 matmul
// (1024^3, A B^T, measured once): the target for the forward is at most 2.
//   bench_attention --benchmark_min_time=0.1
//   bench_attention --benchmark_filter='batch:64/len:64/.*/path:2'   (rows path only)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "apps/vkf/bench/shapes.h"
#include "bench/bench_device.h"
#include "bench/bench_peak.h"
#include "engine/engine.h"
#include "engine/ops/attention.h"
#include "engine/ops/matmul.h"
#include "engine/ops/peak.h"
#include "engine/step_scalars.h"

using namespace vkf;

namespace {

using vkf::bench::device;

// The device's fp32 matmul rate (its own tuning row) at 1024^3, A B^T, in GFLOP/s.
double matmul_gflops(Device& dev) {
  static const double gflops = [&] {
    const uint32_t s = 1024;
    Buffer a = dev.allocate(s * s * 4, "a"), b = dev.allocate(s * s * 4, "b");
    Buffer c = dev.allocate(s * s * 4, "c");
    Recorder rec(dev);
    rec.fill(a, 0x3C23D70Au);  // 0.01f
    rec.fill(b, 0x3C23D70Au);
    rec.finish().run();
    Recorder mm(dev, bench::timed_recorder(dev));
    ops::matmul(dev, mm, {.a = a, .b = b, .c = c, .m = s, .n = s, .k = s, .trans_b = true});
    Sequence seq = mm.finish();
    seq.run();
    double best = 1e30;
    for (int r = 0; r < 3; ++r) best = std::min(best, bench::timed_run(seq));
    const double g = 2.0 * s * s * s / best * 1e-9;
    std::fprintf(stderr, "fp32 matmul 1024^3 (A B^T) on %s: %.1f GFLOP/s\n",
                 dev.info().name.c_str(), g);
    return g;
  }();
  return gflops;
}

void run(benchmark::State& state, bool backward) {
  const uint32_t batch = uint32_t(state.range(0)), len = uint32_t(state.range(1));
  const uint32_t heads = bench::k_attention_heads, d = bench::k_attention_head_dim;
  const bool causal = state.range(2) != 0;
  const float dropout = state.range(3) ? 0.1f : 0.0f;
  const auto path = static_cast<ops::AttentionPath>(state.range(4));
  Device& dev = device();
  const uint64_t n = uint64_t{batch} * heads * len * d, rows = uint64_t{batch} * heads * len;
  Buffer q = dev.allocate(n * 4, "q"), k = dev.allocate(n * 4, "k"), v = dev.allocate(n * 4, "v");
  Buffer o = dev.allocate(n * 4, "o"), d_o = dev.allocate(n * 4, "d_o");
  Buffer d_q = dev.allocate(n * 4, "d_q"), d_k = dev.allocate(n * 4, "d_k");
  Buffer d_v = dev.allocate(n * 4, "d_v");
  Buffer lse = dev.allocate(rows * 4, "lse"), delta = dev.allocate(rows * 4, "delta");
  Buffer scalars = dev.allocate(sizeof(StepScalars), "scalars", MemoryKind::host);
  StepScalars st;
  std::memcpy(scalars.mapped(), &st, sizeof st);
  ops::AttentionArgs a;
  a.batch = batch, a.heads = heads, a.len_q = len, a.len_k = len, a.d_k = d, a.d_v = d;
  a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse, a.scalars = scalars;
  a.causal = causal, a.dropout_p = dropout;
  if (const char* t = std::getenv("VKF_ATTENTION_TILES")) {  // "workgroup,block_q,block_k"
    std::sscanf(t, "%u,%u,%u", &a.tiles.workgroup, &a.tiles.block_q, &a.tiles.block_k);
  }
  if (const char* r = std::getenv("VKF_ATTENTION_ROWS")) a.tiles.rows = uint32_t(std::atoi(r));
  a.tiles.path = path;
  ops::AttentionTiles bwd;  // the backward kernels' own default tiles, on the same path
  bwd.path = path, bwd.rows = a.tiles.rows;
  {  // inputs: anything finite
    Recorder init(dev);
    for (const Buffer* b : {&q, &k, &v, &d_o}) init.fill(*b, 0x3C23D70Au);  // 0.01f
    ops::attention_forward(dev, init, a);
    init.finish().run();
  }
  Recorder rec(dev, bench::timed_recorder(dev));
  if (backward)
    ops::attention_backward(dev, rec, {a, d_o, d_q, d_k, d_v, delta, bwd, bwd});
  else
    ops::attention_forward(dev, rec, a);
  Sequence seq = rec.finish();
  const double flops = 4.0 * batch * heads * len * len * d * (backward ? 2.5 : 1.0);
  bench::time_against_peak(state, dev, seq, flops, bench::Rate::flops);
  if (state.counters.count("GFLOP/s"))
    state.counters["x_matmul_time"] = matmul_gflops(dev) / state.counters["GFLOP/s"].value;
  state.SetLabel(dev.info().name + (path == ops::AttentionPath::rows ? " rows" : " tiled"));
}

void BM_attention_forward(benchmark::State& s) {
  run(s, false);
}
void BM_attention_backward(benchmark::State& s) {
  run(s, true);
}

// Args: batch, len, causal, dropout, path (1 tiled, 2 rows); the shapes are
// apps/vkf/bench/shapes.h's, shared with `vkf bench`.
int register_all() {
  for (auto* fn : {BM_attention_forward, BM_attention_backward}) {
    auto* b = benchmark::RegisterBenchmark(
        fn == BM_attention_forward ? "BM_attention_forward" : "BM_attention_backward", fn);
    b->ArgNames({"batch", "len", "causal", "dropout", "path"});
    for (const bench::AttentionShape& s : bench::attention_shapes())
      for (int64_t path : {1, 2}) b->Args({s.batch, s.len, s.causal, s.dropout, path});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  return 0;
}
[[maybe_unused]] const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
