// Cross-entropy, log-softmax, Adam, gradient norm and top-k throughput at Transformer-base shapes.
// The GPU is timed by replaying a recorded Sequence (uploads excluded).
//
//   ./bench/bench_loss_adam                 all shapes
//   VKF_BENCH_DEVICE=<selector>             pick the Vulkan device (default: best)
//   VKF_BENCH_SMALL=1                       Adam/grad_norm over 4M instead of 60M parameters
//                                           (for CPU devices such as lavapipe; without it they
//                                           take as many as one buffer holds, 33.5M there)
// Row ops take fewer rows than asked when [rows, V] exceeds the device's largest storage buffer
// (lavapipe: 128 MiB, so 885 rows at V = 37000); the `rows` counter reports what ran.
//
// Counter GB/s counts the bytes each kernel moves (fp32):
//   cross_entropy (grad, in place): read logits twice, write dlogits   12 rows V
//   cross_entropy (no grad):        read logits once                    4 rows V
//   log_softmax:                    read x twice, write y               12 rows V
//   adam:                           read w, g, m, v; write w, m, v      28 n
//   grad_norm:                      read g                              4 n
//   topk:                           read values                         4 rows V
//                                   (with lsm, the chunked path reads them twice)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "bench/bench_device.h"
#include "bench/bench_peak.h"
#include "engine/engine.h"
#include "engine/ops/adam.h"
#include "engine/ops/loss.h"
#include "engine/ops/topk.h"
#include "engine/step_scalars.h"

namespace {

using vkf::bench::device;

bool small() {
  const char* s = std::getenv("VKF_BENCH_SMALL");
  return s && *s && *s != '0';
}

vkf::Buffer filled(vkf::Device& dev, size_t n, uint32_t seed, const char* what, float lo = -1.0f,
                   float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  vkf::Buffer b = dev.allocate(n * 4, what);
  dev.upload(b, v);
  return b;
}

vkf::Buffer step_buffer(vkf::Device& dev) {
  vkf::Buffer b = dev.allocate(sizeof(vkf::StepScalars), "step", vkf::MemoryKind::host);
  vkf::StepScalars st;
  st.step = 100;
  st.grad_scale = 1.0f / 4096;
  std::memcpy(b.mapped(), &st, sizeof st);
  return b;
}

void time_sequence(benchmark::State& state, vkf::Sequence& seq, double bytes) {
  vkf::bench::time_against_peak(state, device(), seq, bytes, vkf::bench::Rate::bytes);
}

// Devices with small buffers (lavapipe: 128 MiB) get fewer rows; the `rows` counter says how many.
uint32_t fitting_rows(vkf::Device& dev, uint32_t rows, uint32_t vocab) {
  uint64_t limit = std::min(dev.info().max_storage_buffer_range, dev.info().max_buffer_bytes);
  return uint32_t(std::min<uint64_t>(rows, std::max<uint64_t>(1, limit / (uint64_t{vocab} * 4))));
}

vkf::ops::RowKernelConfig row_config(int64_t wg) {
  return {.workgroup_size = uint32_t(wg)};  // subgroup path when the device has it
}

// reads: 0 storage buffer, 1 texel view, 2 the device's default (texel on CPU devices where the
// view fits: at most maxTexelBufferElements logits, 134M on lavapipe).
vkf::ops::RowKernelConfig::Reads reads_arg(int64_t r) {
  using Reads = vkf::ops::RowKernelConfig::Reads;
  return r == 0 ? Reads::storage : r == 1 ? Reads::texel : Reads::automatic;
}

// Args: rows, vocab, gradient (0/1), workgroup size, reads.
void bm_cross_entropy(benchmark::State& state) {
  vkf::Device& dev = device();
  const uint32_t vocab = uint32_t(state.range(1));
  const uint32_t rows = fitting_rows(dev, uint32_t(state.range(0)), vocab);
  const bool grad = state.range(2) != 0;
  state.counters["rows"] = rows;
  vkf::Buffer logits = filled(dev, size_t{rows} * vocab, 1, "logits", -4.0f, 4.0f);
  std::vector<int32_t> t(rows);
  for (uint32_t r = 0; r < rows; ++r) t[r] = int32_t((r * 7919u) % vocab);
  vkf::Buffer targets = dev.allocate(rows * 4, "targets");
  dev.upload(targets, t);
  vkf::Buffer loss = dev.allocate(rows * 4, "loss"), logp = dev.allocate(rows * 4, "logp");
  vkf::Buffer step = step_buffer(dev);
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  vkf::ops::CrossEntropyArgs a{.logits = logits,
                               .targets = targets,
                               .step = step,
                               .row_loss = loss,
                               .row_logp = logp,
                               .rows = rows,
                               .vocab = vocab,
                               .pad_id = 0,
                               .label_smoothing = 0.1f,
                               .config = row_config(state.range(3))};
  a.config.reads = reads_arg(state.range(4));
  if (grad) a.dlogits = logits;  // in place, as the trainer runs it
  vkf::ops::cross_entropy(dev, rec, a);
  vkf::Sequence seq = rec.finish();
  time_sequence(state, seq, double(rows) * vocab * (grad ? 12 : 4));
}

void bm_log_softmax(benchmark::State& state) {
  vkf::Device& dev = device();
  const uint32_t vocab = uint32_t(state.range(1));
  const uint32_t rows = fitting_rows(dev, uint32_t(state.range(0)), vocab);
  state.counters["rows"] = rows;
  vkf::Buffer x = filled(dev, size_t{rows} * vocab, 1, "x", -4.0f, 4.0f);
  vkf::Buffer y = dev.allocate(size_t{rows} * vocab * 4, "y");
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  vkf::ops::log_softmax(
      dev, rec,
      {.x = x, .y = y, .rows = rows, .cols = vocab, .config = row_config(state.range(2))});
  vkf::Sequence seq = rec.finish();
  time_sequence(state, seq, double(rows) * vocab * 12);
}

// 60M parameters (Transformer-big scale), fewer where one buffer cannot hold them.
uint32_t param_count(vkf::Device& dev) {
  if (small()) return 4u << 20;
  uint64_t limit = std::min(dev.info().max_storage_buffer_range, dev.info().max_buffer_bytes);
  return uint32_t(std::min<uint64_t>(60'000'000u, limit / 4));
}

// Adam's four buffers, filled once for every row: filling 60M elements four times took each row
// about 10 s on the host, and an H200 then timed it for 0.1 s. The values Adam leaves behind
// time the same as fresh ones.
struct AdamBuffers {
  uint32_t n;
  vkf::Buffer w, g, m, v;
};
AdamBuffers& adam_buffers(vkf::Device& dev) {
  static AdamBuffers b = [&] {
    const uint32_t n = param_count(dev);
    return AdamBuffers{n, filled(dev, n, 1, "w"), filled(dev, n, 2, "g"),
                       filled(dev, n, 3, "m", 0.0f, 0.0f), filled(dev, n, 4, "v", 0.0f, 0.0f)};
  }();
  return b;
}

void bm_adam(benchmark::State& state) {
  vkf::Device& dev = device();
  AdamBuffers& b = adam_buffers(dev);
  const uint32_t n = b.n;
  const vkf::Buffer &w = b.w, &g = b.g, &m = b.m, &v = b.v;
  vkf::Buffer step = step_buffer(dev), norm = dev.allocate(16, "norm");
  dev.upload(norm, std::vector<uint32_t>{0, 0, 0, 0});
  vkf::ops::AdamOptions o;
  o.max_grad_norm = 1.0f;
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  vkf::ops::adam(
      dev, rec,
      {.params = w,
       .grads = g,
       .m = m,
       .v = v,
       .step = step,
       .grad_norm = norm,
       .n = n,
       .options = o,
       .config = vkf::ops::AdamConfig{uint32_t(state.range(0)), uint32_t(state.range(1)),
                                      state.range(2) ? vkf::ops::AdamConfig::Reads::texel
                                                     : vkf::ops::AdamConfig::Reads::storage}});
  vkf::Sequence seq = rec.finish();
  state.counters["params"] = n;
  time_sequence(state, seq, double(n) * 28);
}

void bm_grad_norm(benchmark::State& state) {
  vkf::Device& dev = device();
  const uint32_t n = param_count(dev);
  vkf::Buffer g = filled(dev, n, 2, "g");
  vkf::Buffer norm = dev.allocate(16, "norm");
  vkf::ops::GradNormArgs a{.grads = {{g, n}}, .out = norm, .max_groups = uint32_t(state.range(0))};
  vkf::Buffer partials = dev.allocate(vkf::ops::grad_norm_partials_bytes(a), "partials");
  a.partials = partials;
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  vkf::ops::grad_norm(dev, rec, a);
  vkf::Sequence seq = rec.finish();
  state.counters["params"] = n;
  time_sequence(state, seq, double(n) * 4);
}

// Args: rows, vocab, k, path (0: chunks, 1: chunks pruned, the default; 2: a subgroup per row),
// lsm (1: the values are logits and the winners get their log-softmax, as beam search runs it).
void bm_topk(benchmark::State& state) {
  const uint32_t rows = uint32_t(state.range(0)), vocab = uint32_t(state.range(1)),
                 k = uint32_t(state.range(2));
  vkf::Device& dev = device();
  vkf::Buffer x = filled(dev, size_t{rows} * vocab, 1, "logprobs", -20.0f, 0.0f);
  vkf::Buffer ov = dev.allocate(rows * k * 4, "values"), oi = dev.allocate(rows * k * 4, "idx");
  vkf::ops::TopKConfig config;
  config.path = vkf::ops::TopKPath::chunks;
  config.prune = state.range(3) == 1;
  if (state.range(3) == 2) config.path = vkf::ops::TopKPath::subgroup_rows;
  const bool log_softmax = state.range(4) != 0;
  vkf::Buffer scratch = dev.allocate(
      std::max<uint64_t>(16, vkf::ops::topk_scratch_bytes(rows, vocab, k, config, log_softmax)),
      "scr");
  vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
  vkf::ops::topk(dev, rec,
                 {.values = x,
                  .out_values = ov,
                  .out_indices = oi,
                  .scratch = scratch,
                  .rows = rows,
                  .n = vocab,
                  .k = k,
                  .config = config,
                  .log_softmax = log_softmax});
  vkf::Sequence seq = rec.finish();
  time_sequence(state, seq, double(rows) * vocab * 4);
}

}  // namespace

BENCHMARK(bm_cross_entropy)
    ->ArgNames({"rows", "V", "grad", "wg", "reads"})
    ->Args({4096, 37000, 1, 64, 2})
    ->Args({4096, 37000, 1, 256, 2})
    ->Args({4096, 37000, 1, 1024, 2})
    ->Args({4096, 37000, 0, 256, 2})
    ->Args({25000, 37000, 1, 256, 2})
    // The read paths side by side where a texel view fits: the tiny/small presets' vocabulary
    // at 4096 tokens, and 3000 rows of the base vocabulary.
    ->ArgsProduct({{4096}, {8000}, {1}, {32, 256}, {0, 1}})
    ->ArgsProduct({{3000}, {37000}, {1}, {32, 256}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bm_log_softmax)
    ->ArgNames({"rows", "V", "wg"})
    ->Args({4096, 37000, 256})
    ->Args({25000, 37000, 256})
    ->Args({128, 37000, 256})  // a beam-search step's rows (see bm_topk)
    ->Args({128, 8000, 256})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Adam's tuned dimensions (ops::AdamConfig) around both priors: wg256 x4 storage (GPUs) and
// wg256 x4 texel (CPU devices), and the old prior wg256 x1 storage.
BENCHMARK(bm_adam)
    ->ArgNames({"wg", "elems", "texel"})
    ->ArgsProduct({{64, 256, 1024}, {1, 4, 8}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(bm_grad_norm)
    ->ArgNames({"max_groups"})
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Beam 4 over 32 sentences (k = 2 beam + 2) at the paper's and the bundled vocabulary's sizes;
// beam 1 over one sentence (a GPU's worst case for a subgroup per row); a wide beam. lsm 1 is
// the decoder step's op; against lsm 0 plus bm_log_softmax, what fusing the two saves.
BENCHMARK(bm_topk)
    ->ArgNames({"rows", "V", "k", "path", "lsm"})
    ->ArgsProduct({{128}, {37000, 8000}, {10}, {1, 2}, {0, 1}})
    ->Args({1, 37000, 4, 1, 1})
    ->Args({1, 37000, 4, 2, 1})
    ->Args({128, 37000, 64, 1, 0})
    ->Args({128, 37000, 64, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
