#pragma once
// Throughput probes: the kernels that measure what a device can reach at best (fp32 FMA rate,
// shader copy bandwidth), the yardsticks the benchmarks divide their rates by (ratio_peak).
// Kernels: shaders/peak_fma.comp (and its fp16 variant), shaders/peak_copy.comp.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::ops {

struct FmaProbeArgs {
  BufferRef out;  // [threads] f32
  uint32_t threads = 0;
  uint32_t iterations = 0;  // a multiple of 8
  uint32_t chains = 8;      // independent FMA chains a thread, 1..k_fma_probe_max_chains
  float a = 0.999f, b = 0.001f;
  // The chains in float16_t (kernel peak_fma_f16; needs DeviceInfo::fp16), the sum in fp32.
  bool f16 = false;
};
constexpr uint32_t k_fma_probe_max_chains = 32;
// out[t] = sum over c < chains of x_c after `iterations` steps of x_c = fma(x_c, a, b), each x_c
// starting at ((t mod 7) + c) / 1024: 2 * chains * iterations FLOPs a thread.
void fma_probe(Device& dev, Recorder& rec, const FmaProbeArgs& a);

// dst[0, words) = src[0, words) (32-bit words), as 4-vectors when `vec4` (words % 4 == 0); with
// `texel` (implies 4-vectors) src is read through an RGBA32F texel view, exact for non-NaN words
// (texel_view_misfit says where a device cannot view src so).
void copy_probe(Device& dev, Recorder& rec, const BufferRef& src, const BufferRef& dst,
                uint64_t words, bool vec4, bool texel = false);

// The fastest of `runs` runs of `seq` (submit and wait), in seconds.
double best_run_seconds(Sequence& seq, int runs = 3);

struct DevicePeak {
  double gflops = 0;    // fp32, FMA = 2 FLOPs
  double gbytes_s = 0;  // bytes read + written a second by a shader copy
  uint32_t chains = 0;  // the chain count that gave `gflops`
  bool copy_vec4 = false;
  bool copy_texel = false;  // the best copy read through a texel view (copy_vec4 too)
  uint32_t threads = 0;     // the thread count that gave `gflops` (1024 iterations each)
  uint64_t copy_bytes = 0;  // the size of the copy that gave `gbytes_s`
  // fp16 (float16_t chains, a = 0.5, b = 0.25), when measure_peak was asked for it and the
  // device has shaderFloat16; else 0.
  double gflops_f16 = 0;
  uint32_t chains_f16 = 0, threads_f16 = 0;
};
// Runs the probes, each configuration until it has taken >= min_seconds (best of three), and
// keeps the best: a second or two on lavapipe, less on a GPU. `fp16`: also the fp16 FMA rate.
DevicePeak measure_peak(Device& dev, double min_seconds = 0.02, bool fp16 = false);

}  // namespace vkf::ops
