#pragma once
// The device's measured peak (engine/ops/peak.h: an FMA-chain kernel and a shader copy), once
// per process, and the counters that relate a benchmark's rate to it: the rate (GFLOP/s or
// GB/s), peak_GFLOP/s or peak_GB/s, and ratio_peak = rate / peak.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "apps/vkf/bench/timing.h"
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
                 p.copy_texel  ? "4-vectors through a texel view"
                 : p.copy_vec4 ? "4-vectors"
                               : "words");
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

// The timing code (timed_recorder, timed_run: timestamps on GPUs, the host clock on CPU
// devices) is apps/vkf/bench/timing.h, shared with `vkf bench`.

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
