#pragma once
// Throughput probes: the kernels that measure what a device can reach at best (fp32 FMA rate,
// shader copy bandwidth), the yardsticks the benchmarks divide their rates by (ratio_peak).
// Kernels: shaders/peak_fma.comp (and its fp16 variant), shaders/peak_copy.comp,
// shaders/peak_coopmat.comp (tensor cores through VK_KHR_cooperative_matrix).
#include <cstdint>
#include <string>
#include <vector>

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

// The tensor-core probe: each subgroup runs `iterations` cooperative-matrix products of constant
// fp16 fragments (every element a, every element b) into `chains` fp32 accumulators that start at
// 0, 1, ..., chains - 1, and stores their sum, a row-major M x N block at out[s * M * N] for
// subgroup s: every element sum over c of (c + iterations * K * a * b). 2 * M * N * K * chains *
// iterations FLOPs a subgroup, coopmat_probe_subgroups a workgroup.
// Where the fragments come from: built once (the products alone), or loaded from shared memory
// every iteration, staged as uvec4s (as the matmul stages its tiles) or as float16_t: what
// feeding the tensor cores costs, and whether the staging type matters to the driver.
enum class CoopmatOperands : uint32_t { constant = 0, shared_vec4 = 1, shared_half = 2 };
struct CoopmatProbeArgs {
  BufferRef out;       // [workgroups * coopmat_probe_subgroups * M * N] f32
  CoopmatShape shape;  // one DeviceInfo::khr_coopmat_shapes lists with f16_f32_subgroup()
  uint32_t workgroups = 0;
  uint32_t iterations = 0;
  uint32_t chains = 4;  // 1..k_coopmat_probe_max_chains
  float a = 1.0f / 64, b = 1.0f / 64;
  CoopmatOperands operands = CoopmatOperands::constant;  // shared: M, N, K multiples of 8
};
constexpr uint32_t k_coopmat_probe_max_chains = 16;
constexpr uint32_t k_coopmat_probe_subgroups = 4;
// Why this device or build cannot run the probe ("" when it can): no VK_KHR_cooperative_matrix,
// no fp16 x fp16 + fp32 subgroup shape, or a glslc too old to build the kernel.
std::string coopmat_probe_misfit(const DeviceInfo& info);
void coopmat_probe(Device& dev, Recorder& rec, const CoopmatProbeArgs& a);

struct CoopmatPeak {
  double gflops = 0;  // the best over the shapes and chain counts tried
  CoopmatShape shape;
  uint32_t chains = 0, workgroups = 0, iterations = 0;
  std::vector<std::pair<CoopmatShape, double>> per_shape;  // each shape's best GFLOP/s
  // The best shape and configuration with its fragments loaded from shared memory every product
  // (0 where the shape's dimensions are not multiples of 8).
  double shared_vec4_gflops = 0, shared_half_gflops = 0;
};
// Every listed fp16 x fp16 + fp32 subgroup shape at a few chain counts, the workgroup count
// grown until a dispatch takes min_seconds; throws Error with coopmat_probe_misfit's reason.
CoopmatPeak measure_coopmat_peak(Device& dev, double min_seconds = 0.02);

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
