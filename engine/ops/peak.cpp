#include "engine/ops/peak.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/matmul_tuning.h"
#include "engine/shader_registry.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_probe_local = 256;

}  // namespace

double best_run_seconds(Sequence& seq, int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    seq.run();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void fma_probe(Device& dev, Recorder& rec, const FmaProbeArgs& a) {
  if (a.chains < 1 || a.chains > k_fma_probe_max_chains)
    throw Error("fma_probe: chains must be 1.." + std::to_string(k_fma_probe_max_chains));
  if (a.iterations % 8 != 0) throw Error("fma_probe: iterations must be a multiple of 8");
  if (a.out.size < uint64_t{a.threads} * 4)
    throw Error("fma_probe: the output holds fewer than " + std::to_string(a.threads) + " floats");
  struct {
    uint32_t threads, iterations;
    float a, b;
  } push{a.threads, a.iterations, a.a, a.b};
  if (a.f16 && !dev.info().fp16) throw Error("fma_probe: fp16 chains need shaderFloat16");
  const Kernel& k =
      dev.kernel({a.f16 ? "peak_fma_f16" : "peak_fma", 1, sizeof push, {k_probe_local, a.chains}});
  rec.dispatch(k, {out(a.out)}, push, groups_1d(a.threads, k_probe_local));
}

std::string coopmat_probe_misfit(const DeviceInfo& info) {
  if (!info.khr_coopmat) return info.name + " has no VK_KHR_cooperative_matrix";
  bool shape = false;
  for (const CoopmatShape& s : info.khr_coopmat_shapes) shape = shape || s.f16_f32_subgroup();
  if (!shape) return info.name + " lists no fp16 x fp16 + fp32 subgroup cooperative-matrix shape";
  if (!info.fp16) return info.name + " has no shaderFloat16 (fp16 fragments)";
  if (!info.vulkan_memory_model) return info.name + " has no vulkanMemoryModel";
  if (info.min_subgroup_size != info.max_subgroup_size && !info.subgroup_size_control)
    return "subgroup sizes vary and cannot be pinned";
  if (std::string why = known_khr_compiler_crash(info); !why.empty()) return why;
  if (shaders::find("peak_coopmat_khr").empty())
    return "this build's glslc could not compile GL_KHR_cooperative_matrix (peak_coopmat_khr)";
  return "";
}

void coopmat_probe(Device& dev, Recorder& rec, const CoopmatProbeArgs& a) {
  const DeviceInfo& info = dev.info();
  if (std::string why = coopmat_probe_misfit(info); !why.empty())
    throw Error("coopmat_probe: " + why);
  bool listed = false;
  for (const CoopmatShape& s : info.khr_coopmat_shapes)
    listed = listed ||
             (s.f16_f32_subgroup() && s.m == a.shape.m && s.n == a.shape.n && s.k == a.shape.k);
  if (!listed) throw Error("coopmat_probe: " + a.shape.describe() + " is not a listed shape");
  if (a.operands != CoopmatOperands::constant && (a.shape.m % 8 || a.shape.n % 8 || a.shape.k % 8))
    throw Error(
        "coopmat_probe: fragments from shared memory need dimensions that are "
        "multiples of 8, not " +
        a.shape.describe());
  if (a.chains < 1 || a.chains > k_coopmat_probe_max_chains)
    throw Error("coopmat_probe: chains must be 1.." + std::to_string(k_coopmat_probe_max_chains));
  const uint64_t floats =
      uint64_t{a.workgroups} * k_coopmat_probe_subgroups * a.shape.m * a.shape.n;
  if (a.out.size < floats * 4)
    throw Error("coopmat_probe: the output holds fewer than " + std::to_string(floats) + " floats");
  struct {
    uint32_t iterations;
    float a, b;
  } push{a.iterations, a.a, a.b};
  // Whole subgroups of the device's default width, which its shapes are listed for.
  KernelSpec spec{
      "peak_coopmat_khr",
      1,
      sizeof push,
      {k_coopmat_probe_subgroups * info.subgroup_size, a.chains, a.shape.m, a.shape.n, a.shape.k}};
  if (info.min_subgroup_size != info.max_subgroup_size) spec.subgroup_size = info.subgroup_size;
  rec.dispatch(dev.kernel(spec), {out(a.out)}, push, {a.workgroups, 1, 1});
}

void copy_probe(Device& dev, Recorder& rec, const BufferRef& src, const BufferRef& dst,
                uint64_t words, bool vec4, bool texel) {
  vec4 = vec4 || texel;
  if (src.size < words * 4 || dst.size < words * 4)
    throw Error("copy_probe: buffers smaller than " + std::to_string(words) + " words");
  if (vec4 && words % 4 != 0)
    throw Error("copy_probe: 4-vector copy of a word count not a multiple of 4");
  const uint64_t n = vec4 ? words / 4 : words;
  if (n > UINT32_MAX) throw Error("copy_probe: too many elements");
  const uint32_t push = static_cast<uint32_t>(n);
  if (texel) {
    if (n > INT32_MAX) throw Error("copy_probe: more texels than texelFetch indexes");
    KernelSpec spec{"peak_copy_texel", 2, sizeof push, {k_probe_local, 1u}};
    spec.texel_buffers = 1u;  // binding 0
    rec.dispatch(dev.kernel(spec), {in_texels(src, VK_FORMAT_R32G32B32A32_SFLOAT), out(dst)}, push,
                 groups_1d(n, k_probe_local));
    return;
  }
  const Kernel& k = dev.kernel({"peak_copy", 2, sizeof push, {k_probe_local, vec4 ? 1u : 0u}});
  rec.dispatch(k, {in(src), out(dst)}, push, groups_1d(n, k_probe_local));
}

namespace {

// The best FMA rate over a few chain counts, growing the thread count until a dispatch takes
// min_seconds (a GPU needs ~10^6 threads to fill, a CPU far fewer): gflops, chains, threads.
std::tuple<double, uint32_t, uint32_t> best_fma(Device& dev, const BufferRef& out_buf,
                                                double min_seconds, bool f16) {
  const uint32_t iterations = 1024, max_threads = 1u << 24;
  std::tuple<double, uint32_t, uint32_t> best{0.0, 0u, 0u};
  for (uint32_t chains : {8u, 16u, 32u}) {
    for (uint32_t threads = 1u << 12;; threads *= 2) {
      Recorder rec(dev);
      FmaProbeArgs args{
          .out = out_buf, .threads = threads, .iterations = iterations, .chains = chains};
      if (f16) args.a = 0.5f, args.b = 0.25f, args.f16 = true;  // stays normal in fp16
      fma_probe(dev, rec, args);
      Sequence seq = rec.finish();
      seq.run();  // warm-up: pipeline compilation
      const double t = best_run_seconds(seq);
      if (t >= min_seconds || threads == max_threads) {
        const double gflops = 2.0 * chains * iterations * threads / t * 1e-9;
        if (gflops > std::get<0>(best)) best = {gflops, chains, threads};
        break;
      }
    }
  }
  return best;
}

}  // namespace

CoopmatPeak measure_coopmat_peak(Device& dev, double min_seconds) {
  const DeviceInfo& info = dev.info();
  if (std::string why = coopmat_probe_misfit(info); !why.empty())
    throw Error("measure_coopmat_peak: " + why);
  // Iterations long enough that a subgroup's set-up and store are noise; the workgroup count
  // grows until a dispatch fills the device (a GPU's SMs several times over) and takes
  // min_seconds.
  const uint32_t iterations = 1024, max_workgroups = 1u << 16;
  Buffer out_buf;
  // GFLOP/s and the workgroup count that gave it.
  auto rate = [&](const CoopmatShape& shape, uint32_t chains, CoopmatOperands operands,
                  uint32_t groups) -> std::pair<double, uint32_t> {
    for (;; groups *= 2) {
      const uint64_t bytes = uint64_t{groups} * k_coopmat_probe_subgroups * shape.m * shape.n * 4;
      if (out_buf.size() < bytes) out_buf = dev.allocate(bytes, "coopmat probe output");
      Recorder rec(dev);
      coopmat_probe(dev, rec,
                    {.out = out_buf.ref().slice(0, bytes),
                     .shape = shape,
                     .workgroups = groups,
                     .iterations = iterations,
                     .chains = chains,
                     .operands = operands});
      Sequence seq = rec.finish();
      seq.run();  // warm-up: pipeline compilation
      const double t = best_run_seconds(seq);
      if (t >= min_seconds || groups == max_workgroups)
        return {2.0 * shape.m * shape.n * shape.k * chains * iterations * double(groups) *
                    k_coopmat_probe_subgroups / t * 1e-9,
                groups};
    }
  };
  CoopmatPeak best;
  for (const CoopmatShape& shape : info.khr_coopmat_shapes) {
    if (!shape.f16_f32_subgroup()) continue;
    double shape_best = 0;
    for (uint32_t chains : {4u, 8u}) {
      const auto [gflops, groups] = rate(shape, chains, CoopmatOperands::constant, 16);
      shape_best = std::max(shape_best, gflops);
      if (gflops > best.gflops) {
        best.gflops = gflops, best.shape = shape, best.chains = chains;
        best.workgroups = groups, best.iterations = iterations;
      }
    }
    best.per_shape.emplace_back(shape, shape_best);
  }
  if (best.shape.m % 8 == 0 && best.shape.n % 8 == 0 && best.shape.k % 8 == 0) {
    best.shared_vec4_gflops =
        rate(best.shape, best.chains, CoopmatOperands::shared_vec4, best.workgroups).first;
    best.shared_half_gflops =
        rate(best.shape, best.chains, CoopmatOperands::shared_half, best.workgroups).first;
  }
  return best;
}

DevicePeak measure_peak(Device& dev, double min_seconds, bool fp16) {
  DevicePeak peak;
  Buffer out_buf = dev.allocate(uint64_t{1u << 24} * 4, "peak probe output");
  std::tie(peak.gflops, peak.chains, peak.threads) = best_fma(dev, out_buf, min_seconds, false);
  if (fp16 && dev.info().fp16)
    std::tie(peak.gflops_f16, peak.chains_f16, peak.threads_f16) =
        best_fma(dev, out_buf, min_seconds, true);

  // Copy bandwidth over the largest buffer pair that fits (up to 256 MiB each: past any cache).
  const uint64_t bytes = std::min<uint64_t>({dev.info().max_storage_buffer_range,
                                             dev.info().max_buffer_bytes, 256ull << 20}) /
                         16 * 16;
  Buffer src = dev.allocate(bytes, "peak probe source"),
         dst = dev.allocate(bytes, "peak probe destination");
  // Words, 4-vectors, and 4-vectors read through a texel view where the device has one: the
  // peak is what the best way of reading reaches (copy_probe says why texel views).
  const bool texel_ok =
      texel_view_misfit(dev.info(), src.ref(), VK_FORMAT_R32G32B32A32_SFLOAT).empty();
  for (int mode = 0; mode < (texel_ok ? 3 : 2); ++mode) {
    const bool vec4 = mode >= 1, texel = mode == 2;
    Recorder rec(dev);
    copy_probe(dev, rec, src, dst, bytes / 4, vec4, texel);
    Sequence seq = rec.finish();
    seq.run();
    const double gbs = 2.0 * double(bytes) / best_run_seconds(seq) * 1e-9;
    if (gbs > peak.gbytes_s) {
      peak.gbytes_s = gbs;
      peak.copy_vec4 = vec4;
      peak.copy_texel = texel;
      peak.copy_bytes = bytes;
    }
  }
  return peak;
}

}  // namespace vkf::ops
