#pragma once
// The device's measured peak (engine/ops/peak.h: an FMA-chain kernel and a shader copy), once
// per process, and the counters that relate a benchmark's rate to it: the rate (GFLOP/s or
// GB/s), peak_GFLOP/s or peak_GB/s, and ratio_peak = rate / peak.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/ops/peak.h"

namespace vkf::bench {

inline const ops::DevicePeak& device_peak(Device& dev) {
  static const ops::DevicePeak peak = [&] {
    ops::DevicePeak p = ops::measure_peak(dev);
    std::fprintf(stderr,
                 "measured peak of %s: %.1f GFLOP/s fp32 (%u FMA chains a thread), %.1f GB/s "
                 "shader copy (%s)\n",
                 dev.info().name.c_str(), p.gflops, p.chains, p.gbytes_s,
                 p.copy_vec4 ? "4-vectors" : "words");
    return p;
  }();
  return peak;
}

enum class Rate { flops, bytes };

// Reports `amount` (FLOPs or bytes one iteration does), done every iteration in `seconds` in
// all, as a rate against the device's peak.
inline void report_against_peak(benchmark::State& state, Device& dev, double amount, double seconds,
                                Rate kind) {
  if (seconds <= 0) return;
  const double rate = amount * double(state.iterations()) / seconds * 1e-9;
  const ops::DevicePeak& peak = device_peak(dev);
  const bool flops = kind == Rate::flops;
  state.counters[flops ? "GFLOP/s" : "GB/s"] = rate;
  state.counters[flops ? "peak_GFLOP/s" : "peak_GB/s"] = flops ? peak.gflops : peak.gbytes_s;
  state.counters["ratio_peak"] = rate / (flops ? peak.gflops : peak.gbytes_s);
}

// GPUs are timed by the kernels' own timestamps, as CUDA events time PyTorch's: there one submit
// and fence wait cost tens of microseconds, longer than many of these kernels. CPU devices are
// timed by the host clock (a submit costs little next to their kernels, and lavapipe's
// timestamps are host clock reads anyway). VKF_BENCH_TIMESTAMPS=1 or 0 forces either.
inline bool timed_by_timestamps(const Device& dev) {
  if (const char* e = std::getenv("VKF_BENCH_TIMESTAMPS"); e && *e)
    return std::string(e) == "1" && dev.info().timestamp_valid_bits != 0;
  return !dev.info().is_cpu() && dev.info().timestamp_valid_bits != 0;
}

// Options for the recorder of a timed sequence: timestamps around its dispatches where the
// device is timed by them.
inline RecorderOptions timed_recorder(const Device& dev) {
  RecorderOptions o;
  o.profile = timed_by_timestamps(dev);
  return o;
}

// Runs `seq` once and returns the seconds it took: from its first to its last timestamp when
// it was recorded with them (timed_recorder), else by the host clock around submit and wait.
inline double timed_run(Sequence& seq) {
  const auto t0 = std::chrono::steady_clock::now();
  seq.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<KernelTiming> kernels = seq.timings();
  if (kernels.empty()) return wall;
  double ms = 0;
  for (const KernelTiming& k : kernels) ms += k.milliseconds;
  return ms * 1e-3;
}

// Runs `seq` once (warm-up: pipelines, first touch), then once per benchmark iteration, and
// reports `amount` (what one run does) against the device's peak. Record `seq` with
// timed_recorder(dev) so that a GPU is timed by its timestamps.
inline void time_against_peak(benchmark::State& state, Device& dev, Sequence& seq, double amount,
                              Rate kind) {
  seq.run();
  double seconds = 0;
  for (auto _ : state) seconds += timed_run(seq);
  report_against_peak(state, dev, amount, seconds, kind);
  state.counters["timestamps"] = seq.timings().empty() ? 0 : 1;
}

}  // namespace vkf::bench
