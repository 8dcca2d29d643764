// LayerNorm (post-LN residual + dropout), embedding and dropout throughput at Transformer-base
// shapes. The GPU is timed by replaying a recorded Sequence (uploads excluded).
//
//   ./bench/bench_norm                      all shapes
//   VKF_BENCH_DEVICE=<selector>             pick the Vulkan device (default: best)
//   VKF_LN_WG=<n>, VKF_LN_REDUCE=shared|subgroup   force the LayerNorm configuration
//   VKF_LN_READS=texel|storage              and how its kernels read their inputs
//   VKF_LN_DROPOUT=<p>                      LayerNorm dropout probability (default 0.1)
//
// Counter GB/s counts the bytes an op must move once (fp32; LayerNorm's f16 = 1 halves them):
//   layer_norm fwd: read x, s; write y, h             16 rows d
//   layer_norm bwd: read dy, h; write dx, ds          16 rows d  (dgamma/dbeta re-read dy, h)
//   embedding fwd:  read table rows; write out         8 tokens d
//   embedding bwd:  read dout; read+write dE rows     12 tokens d (at most; repeats touch fewer)
//   dropout:        read x; write y                    8 n
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_device.h"
#include "bench/bench_peak.h"
#include "engine/engine.h"
#include "engine/ops/dropout.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"
#include "engine/step_scalars.h"

namespace {

using vkf::bench::device;

vkf::Buffer filled(vkf::Device& dev, size_t n, uint32_t seed, const char* what) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  vkf::Buffer b = dev.allocate(n * 4, what);
  dev.upload(b, v);
  return b;
}

vkf::Buffer step_buffer(vkf::Device& dev) {
  vkf::Buffer b = dev.allocate(sizeof(vkf::StepScalars), "step", vkf::MemoryKind::host);
  vkf::StepScalars st;
  st.seed = 1234;
  std::memcpy(b.mapped(), &st, sizeof st);
  return b;
}

float env_dropout() {
  const char* e = std::getenv("VKF_LN_DROPOUT");
  return e ? float(std::atof(e)) : 0.1f;
}

uint32_t env_workgroup() {
  const char* e = std::getenv("VKF_LN_WG");
  return e ? uint32_t(std::atoi(e)) : 0;
}

vkf::ops::RowReduce env_reduce() {
  const char* e = std::getenv("VKF_LN_REDUCE");
  if (!e) return vkf::ops::RowReduce::automatic;
  return std::string(e) == "subgroup" ? vkf::ops::RowReduce::subgroup : vkf::ops::RowReduce::shared;
}

vkf::ops::RowKernelConfig::Reads env_reads() {
  const char* e = std::getenv("VKF_LN_READS");
  if (!e) return vkf::ops::RowKernelConfig::Reads::automatic;
  return std::string(e) == "texel" ? vkf::ops::RowKernelConfig::Reads::texel
                                   : vkf::ops::RowKernelConfig::Reads::storage;
}

void time_sequence(benchmark::State& state, vkf::Sequence& seq, double bytes) {
  vkf::bench::time_against_peak(state, device(), seq, bytes, vkf::bench::Rate::bytes);
}

// A [n] buffer of `t`; f16 ones hold a value pattern (the time does not depend on the values).
vkf::Buffer activation(vkf::Device& dev, size_t n, uint32_t seed, const char* what, vkf::DType t) {
  if (t == vkf::DType::f32) return filled(dev, n, seed, what);
  vkf::Buffer b = dev.allocate((n + 1) / 2 * 4, what);
  vkf::Recorder rec(dev);
  rec.fill(b, 0x3C00B800u + seed);  // halves near 1 and -0.5
  rec.finish().run();
  return b;
}

void bm_layer_norm(benchmark::State& state) {
  const uint32_t rows = uint32_t(state.range(0)), d = uint32_t(state.range(1));
  const bool backward = state.range(2) != 0;
  const vkf::DType t = state.range(3) ? vkf::DType::f16 : vkf::DType::f32;
  vkf::Device& dev = device();
  if (t == vkf::DType::f16 && !dev.info().storage16) {
    state.SkipWithError("no 16-bit storage");
    return;
  }
  const size_t n = size_t{rows} * d, e = vkf::dtype_bytes(t);
  vkf::Buffer x = activation(dev, n, 1, "x", t), s = activation(dev, n, 2, "s", t),
              dy = activation(dev, n, 3, "dy", t);
  vkf::Buffer gamma = filled(dev, d, 4, "gamma"), beta = filled(dev, d, 5, "beta");
  vkf::Buffer y = dev.allocate(n * e, "y"), h = dev.allocate(n * e, "h");
  vkf::Buffer dx = dev.allocate(n * e, "dx"), ds = dev.allocate(n * e, "ds");
  vkf::Buffer mean = dev.allocate(rows * 4, "mean"), rstd = dev.allocate(rows * 4, "rstd");
  vkf::Buffer dg = dev.allocate(d * 4, "dgamma"), db = dev.allocate(d * 4, "dbeta");
  vkf::Buffer scratch = dev.allocate(vkf::ops::layer_norm_backward_scratch_bytes(rows, d), "scr");
  vkf::Buffer step = step_buffer(dev);

  vkf::ops::LayerNormForwardArgs f;
  f.dtype = t;
  f.x = x;
  f.s = s;
  f.gamma = gamma;
  f.beta = beta;
  f.y = y;
  f.h = h;
  f.mean = mean;
  f.rstd = rstd;
  f.step = step;
  f.rows = rows;
  f.d = d;
  f.dropout = env_dropout();
  f.workgroup_size = env_workgroup();
  f.reduce = env_reduce();
  f.reads = env_reads();
  {
    vkf::Recorder rec(dev);
    vkf::ops::layer_norm_forward(dev, rec, f);  // the backward needs h, mean, rstd
    rec.finish().run();
  }
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  if (backward) {
    vkf::ops::LayerNormBackwardArgs b;
    b.dtype = t;
    b.dy = dy;
    b.h = h;
    b.gamma = gamma;
    b.mean = mean;
    b.rstd = rstd;
    b.dx = dx;
    b.ds = ds;
    b.dgamma = dg;
    b.dbeta = db;
    b.scratch = scratch;
    b.step = step;
    b.rows = rows;
    b.d = d;
    b.dropout = f.dropout;
    b.workgroup_size = f.workgroup_size;
    b.reduce = f.reduce;
    b.reads = f.reads;
    vkf::ops::layer_norm_backward(dev, rec, b);
  } else {
    vkf::ops::layer_norm_forward(dev, rec, f);
  }
  vkf::Sequence seq = rec.finish();
  time_sequence(state, seq, 4.0 * double(e) * double(n));
}

void bm_embedding(benchmark::State& state) {
  const uint32_t tokens = uint32_t(state.range(0)), d = uint32_t(state.range(1));
  const uint32_t vocab = uint32_t(state.range(2));
  const bool backward = state.range(3) != 0;
  const uint32_t len = 64;
  vkf::Device& dev = device();
  // Zipf-like ids, as in text: a few frequent tokens, a long tail.
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int32_t> ids(tokens);
  for (auto& id : ids) id = int32_t(std::pow(double(vocab), u(gen))) - 1;
  vkf::Buffer tok = dev.allocate(tokens * 4, "tokens");
  dev.upload(tok, ids);
  vkf::Buffer table = filled(dev, size_t{vocab} * d, 1, "table");
  vkf::Buffer dtable = filled(dev, size_t{vocab} * d, 2, "dtable");
  vkf::Buffer dout = filled(dev, size_t{tokens} * d, 3, "dout");
  vkf::Buffer out = dev.allocate(size_t{tokens} * d * 4, "out");
  vkf::Buffer scratch =
      dev.allocate(vkf::ops::embedding_backward_scratch_bytes(vocab, 0, tokens), "scratch");
  vkf::Buffer step = step_buffer(dev);
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  if (backward) {
    vkf::ops::EmbeddingBackwardArgs b;
    b.tokens = tok;
    b.dout = dout;
    b.dtable = dtable;
    b.scratch = scratch;
    b.step = step;
    b.tokens_count = tokens;
    b.d = d;
    b.vocab = vocab;
    b.len = len;
    b.pad_id = 0;
    b.scale = std::sqrt(float(d));
    b.dropout = 0.1f;
    vkf::ops::embedding_backward(dev, rec, b);
  } else {
    vkf::ops::EmbeddingForwardArgs f;
    f.tokens = tok;
    f.table = table;
    f.out = out;
    f.step = step;
    f.tokens_count = tokens;
    f.d = d;
    f.vocab = vocab;
    f.len = len;
    f.pad_id = 0;
    f.scale = std::sqrt(float(d));
    f.dropout = 0.1f;
    vkf::ops::embedding_forward(dev, rec, f);
  }
  vkf::Sequence seq = rec.finish();
  time_sequence(state, seq, (backward ? 12.0 : 8.0) * tokens * d);
}

void bm_dropout(benchmark::State& state) {
  const uint32_t n = uint32_t(state.range(0));
  vkf::Device& dev = device();
  vkf::Buffer x = filled(dev, n, 1, "x"), y = dev.allocate(size_t{n} * 4, "y");
  vkf::Buffer step = step_buffer(dev);
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  vkf::ops::dropout_forward(dev, rec, {x, y, step, n, 0.1f, 1});
  vkf::Sequence seq = rec.finish();
  time_sequence(state, seq, 8.0 * n);
}

}  // namespace

BENCHMARK(bm_layer_norm)
    ->ArgNames({"rows", "d", "bwd", "f16"})
    ->ArgsProduct({{4096, 25000}, {512}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bm_embedding)
    ->ArgNames({"tokens", "d", "vocab", "bwd"})
    ->Args({4096, 512, 37000, 0})
    ->Args({4096, 512, 37000, 1})
    ->Args({25000, 512, 37000, 0})
    ->Args({25000, 512, 37000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bm_dropout)
    ->ArgNames({"n"})
    ->Arg(4096 * 512)
    ->Arg(25000 * 512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
