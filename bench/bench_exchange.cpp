// Gradient exchange bandwidth (engine/exchange/gradient_exchange.h) by buffer size and replica
// count, over logical devices on the default physical device: device -> host-visible staging,
// host reduce-scatter and all-gather, staging -> device. GB/s counts the device<->host bytes of
// all replicas (2 n 4 each). Paths: staged (a host-visible buffer per device, the sum copied
// into each) and shared (one host allocation imported into every device, nothing copied between
// them). Started by mpirun, every process does the same and the buckets are
// also summed across processes (the MPI path); rank 0 reports, with a fixed iteration count
// (collectives need every process to run the same number).
//   ./bench/bench_exchange --benchmark_format=json
//   mpirun -np 2 ./bench/bench_exchange --benchmark_format=json
//   VKF_BENCH_DEVICE=<selector>
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "bench/bench_device.h"
#include "engine/engine.h"
#include "engine/exchange/gradient_exchange.h"

namespace {

vkf::ProcessGroup* g_group = nullptr;

void exchange(benchmark::State& state) {
  const uint64_t floats = uint64_t(state.range(0));
  const size_t replicas = size_t(state.range(1));
  const vkf::ExchangePath path =
      state.range(2) ? vkf::ExchangePath::shared : vkf::ExchangePath::staged;
  std::vector<std::unique_ptr<vkf::Device>> owned;
  std::vector<vkf::Device*> devices;
  std::vector<vkf::Buffer> buffers;
  std::vector<vkf::BufferRef> refs;
  for (size_t r = 0; r < replicas; ++r) {
    owned.push_back(vkf::Device::create(
        vkf::bench::bench_instance(),
        vkf::tool::device_options({.selector = vkf::bench::device_selector()})));
    devices.push_back(owned.back().get());
    const auto& info = devices.back()->info();
    if (floats * 4 > std::min(info.max_buffer_bytes, info.max_storage_buffer_range)) {
      state.SkipWithError("larger than the device's largest buffer");
      return;
    }
    buffers.push_back(devices.back()->allocate(floats * 4, "grads"));
    vkf::Recorder rec(*devices.back());
    rec.fill(buffers.back(), 0);
    rec.finish().run();
    refs.push_back(buffers.back().ref());
  }
  if (path == vkf::ExchangePath::shared && !vkf::SharedHostMemory::supported(devices)) {
    state.SkipWithError("the device cannot import host memory");
    return;
  }
  vkf::GradientExchange ex(devices, refs, floats, g_group, uint64_t(1) << 22, {}, path);
  ex.all_reduce();  // warm-up
  for (auto _ : state) ex.all_reduce();
  state.counters["GB/s"] = benchmark::Counter(double(ex.stats().bytes) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MiB"] = double(floats) * 4 / (1 << 20);
  state.counters["processes"] = g_group ? g_group->size() : 1;
  state.SetLabel(devices[0]->info().name + (g_group ? std::string(", MPI") : std::string()));
}

// Rank > 0 of an MPI run: runs the benchmarks (the collectives need it) and reports nothing.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<vkf::ProcessGroup> group = vkf::mpi_process_group();
  g_group = group.get();
  // floats (1 MiB .. 256 MiB: tiny's parameters .. base's), replicas, path.
  auto* b = benchmark::RegisterBenchmark("exchange", exchange)
                ->ArgNames({"floats", "replicas", "shared"})
                ->ArgsProduct({{1 << 18, 1 << 22, 1 << 24, 1 << 26}, {2, 3}, {0, 1}})
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
  if (group) b->Iterations(10);
  benchmark::Initialize(&argc, argv);
  if (group && group->rank() != 0) {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
