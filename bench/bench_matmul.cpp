// fp32 matmul throughput, side by side with OpenBLAS cblas_sgemm on the same shapes in the same
// run. The GPU is timed by replaying a recorded Sequence (uploads excluded); on lavapipe both run
// on the same CPU cores, so the vkf/openblas ratio is the meaningful figure there.
//
//   ./bench/bench_matmul                          all shapes
//   VKF_BENCH_SKIP_LARGE=1 ./bench/bench_matmul   skip the vocabulary projection
//   VKF_BENCH_DEVICE=<selector>                   pick the Vulkan device (default: best)
//   VKF_MATMUL_CONFIG=<row>                       force a tuning-table row (default: device's)
//   VKF_MATMUL_TILE=wg,bm,bn,bk,tm,tn,shared      try a configuration not in the table (tuning)
//
// Counters: GFLOP/s (2 m n k per call), and on the vkf rows ratio_openblas = vkf GFLOP/s /
// OpenBLAS GFLOP/s at the same shape (OpenBLAS is benchmarked first) and ratio_peak = vkf GFLOP/s
// / the device's measured fp32 FMA rate (peak_GFLOP/s, bench/bench_peak.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_peak.h"
#include "engine/engine.h"
#include "engine/ops/matmul.h"

#ifdef VKF_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using Shape = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // m, n, k, form

struct Shared {
  std::shared_ptr<vkf::Instance> instance;
  std::unique_ptr<vkf::Device> device;
  std::map<Shape, double> openblas_gflops;
};

Shared& shared() {
  static Shared s = [] {
    Shared r;
    vkf::configure_cpu_driver();  // as the vkf command runs it (engine/cpu_driver.h)
    r.instance = std::make_shared<vkf::Instance>();
    const char* sel = std::getenv("VKF_BENCH_DEVICE");
    r.device = vkf::Device::create(r.instance, {.selector = sel ? sel : ""});
    return r;
  }();
  return s;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// CPU seconds of the whole process (all threads: lavapipe's workers, OpenBLAS's pool). The
// machine may be shared, so GFLOP per CPU-second is reported beside the wall-clock rate.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// VKF_MATMUL_TILE, else VKF_MATMUL_CONFIG, else nullptr (the device's row).
const vkf::ops::MatmulConfig* forced_config() {
  static vkf::ops::MatmulConfig custom{};
  if (const char* t = std::getenv("VKF_MATMUL_TILE")) {
    unsigned v[7] = {};
    if (std::sscanf(t, "%u,%u,%u,%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) !=
        7)
      throw vkf::Error("VKF_MATMUL_TILE wants wg,bm,bn,bk,tm,tn,shared");
    custom = {"custom", v[0], v[1], v[2], v[3], v[4], v[5], v[6] != 0};
    return &custom;
  }
  const char* forced = std::getenv("VKF_MATMUL_CONFIG");
  return forced ? &vkf::ops::matmul_config(forced) : nullptr;
}

bool large(int64_t m, int64_t n, int64_t k) {
  return double(m) * n * k > 8e9;
}

bool skip(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  const char* e = std::getenv("VKF_BENCH_SKIP_LARGE");
  if (large(m, n, k) && e && std::string(e) == "1") {
    state.SkipWithError("skipped: VKF_BENCH_SKIP_LARGE=1");
    return true;
  }
  return false;
}

// The 4th argument is the form: 0 = A B, 1 = A B^T (a Linear's forward), 2 = A^T B (its
// weight gradient; A^T is not split into row blocks, so it must fit one binding).
void bm_vkf(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int64_t form = state.range(3);
  const bool trans_a = form == 2, trans_b = form == 1;
  if (skip(state, m, n, k)) return;
  vkf::Device& dev = *shared().device;
  // C (and A) are split into row blocks that each fit one storage-buffer binding
  // (maxStorageBufferRange is 128 MiB on lavapipe: the vocabulary projection's C is 578 MiB).
  const uint64_t max_bytes = std::min<uint64_t>(dev.info().max_storage_buffer_range, 1ull << 30);
  const int64_t rows =
      trans_a ? m : std::min<int64_t>(m, int64_t(max_bytes / (4 * std::max(n, k))));
  vkf::Buffer b = dev.allocate(k * n * 4, "B");
  dev.upload(b, random_floats(k * n, 2));
  std::vector<vkf::Buffer> as, cs;
  vkf::Recorder rec(dev);
  for (int64_t m0 = 0; m0 < m; m0 += rows) {
    const int64_t mc = std::min(rows, m - m0);
    as.push_back(dev.allocate(mc * k * 4, "A"));
    cs.push_back(dev.allocate(mc * n * 4, "C"));
    dev.upload(as.back(), random_floats(mc * k, uint32_t(1 + m0)));
    vkf::ops::MatmulArgs args;
    args.a = as.back();
    args.b = b;
    args.c = cs.back();
    args.m = uint32_t(mc), args.n = uint32_t(n), args.k = uint32_t(k);
    args.trans_a = trans_a;
    args.trans_b = trans_b;
    args.config = forced_config();
    vkf::ops::matmul(dev, rec, args);
  }
  vkf::Sequence seq = rec.finish();
  seq.run();  // warm-up: pipeline creation and first-touch of memory
  double seconds = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    seq.run();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double flops = 2.0 * m * n * k;
  vkf::bench::report_against_peak(state, dev, flops, seconds, vkf::bench::Rate::flops);
  state.counters["GFLOP/cpu_s"] =
      flops * double(state.iterations()) * 1e-9 / (process_cpu_seconds() - cpu0);
  const auto* forced = forced_config();
  const auto& config = forced ? *forced : vkf::ops::choose_matmul_config(dev.info(), trans_b);
  state.SetLabel(dev.info().name + " config=" + config.name +
                 " dispatches=" + std::to_string(seq.dispatch_count()));
  auto it = shared().openblas_gflops.find({m, n, k, form});
  if (it != shared().openblas_gflops.end() && seconds > 0)
    state.counters["ratio_openblas"] = flops * state.iterations() / seconds * 1e-9 / it->second;
}

#ifdef VKF_HAVE_OPENBLAS
void bm_openblas(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int64_t form = state.range(3);
  const bool trans_a = form == 2, trans_b = form == 1;
  if (skip(state, m, n, k)) return;
  auto a = random_floats(m * k, 1), b = random_floats(k * n, 2);
  std::vector<float> c(m * n);
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a.data(),
                trans_a ? int(m) : int(k), b.data(), trans_b ? int(k) : int(n), 0.0f, c.data(),
                int(n));
  };
  call();  // warm-up: thread pool start, first touch
  double seconds = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(c.data());
  }
  const double flops = 2.0 * m * n * k;
  if (seconds > 0) state.counters["GFLOP/s"] = flops * double(state.iterations()) / seconds * 1e-9;
  state.counters["GFLOP/cpu_s"] =
      flops * double(state.iterations()) * 1e-9 / (process_cpu_seconds() - cpu0);
  if (seconds > 0)
    shared().openblas_gflops[{m, n, k, form}] = flops * state.iterations() / seconds * 1e-9;
  state.SetLabel("threads=" + std::to_string(openblas_get_num_threads()));
}
#endif

// m, n, k, form (0 A B, 1 A B^T, 2 A^T B), at batches of 4096 and 25000 tokens: FFN fc1
// x[T,512] W1[2048,512]^T, fc2 h[T,2048] W2[512,2048]^T; the attention projections x[T,512]
// W[512,512]^T; the vocabulary projection x[T,512] E[37000,512]^T; and fc1's backward at 4096
// tokens: dx = dh[T,2048] W1[2048,512] (A B) and dW1 = dh^T x (A^T B).
const std::vector<std::vector<int64_t>> k_shapes = {
    {1024, 1024, 1024, 0}, {1024, 1024, 1024, 1},  {4096, 512, 512, 1},  {4096, 2048, 512, 1},
    {4096, 512, 2048, 1},  {4096, 37000, 512, 1},  {25000, 512, 512, 1}, {25000, 2048, 512, 1},
    {25000, 512, 2048, 1}, {25000, 37000, 512, 1}, {4096, 512, 2048, 0}, {2048, 512, 4096, 2},
};

void register_all() {
  for (const auto& s : k_shapes) {
    // Large shapes take seconds a call on a CPU device: one timed call each.
    const bool big = large(s[0], s[1], s[2]);
#ifdef VKF_HAVE_OPENBLAS
    auto* o = benchmark::RegisterBenchmark("openblas_sgemm", bm_openblas)
                  ->Args(s)
                  ->UseRealTime()
                  ->Unit(benchmark::kMillisecond);
    if (big) o->Iterations(1);
#endif
    auto* v = benchmark::RegisterBenchmark("vkf_matmul_f32", bm_vkf)
                  ->Args(s)
                  ->UseRealTime()
                  ->Unit(benchmark::kMillisecond);
    if (big) v->Iterations(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
