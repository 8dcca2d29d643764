// The device's measured peaks (engine/ops/peak.h): fp32 and fp16 FMA chains, tensor-core
// products through VK_KHR_cooperative_matrix, and a shader copy.
// ops::measure_peak finds each probe's best configuration (chains, threads, copy width); the
// row then times that configuration `repeat` times, and its median is the peak the other rows
// are fractions of.
#include <cmath>
#include <optional>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/peak.h"
#include "engine/recorder.h"

namespace vkf::bench {
namespace {

constexpr uint32_t k_iterations = 1024;  // as measure_peak runs the probe

const ops::DevicePeak& found(Context& cx) {
  if (!cx.probes) cx.probes = ops::measure_peak(cx.dev, 0.02, true);
  return *cx.probes;
}

void fma_row(Context& cx, Row& row, bool f16) {
  if (f16 && !cx.dev.info().fp16) throw Refused("no shaderFloat16 on this device");
  const ops::DevicePeak& p = found(cx);
  const uint32_t chains = f16 ? p.chains_f16 : p.chains, threads = f16 ? p.threads_f16 : p.threads;
  ops::FmaProbeArgs args{.threads = threads, .iterations = k_iterations, .chains = chains};
  if (f16) args.a = 0.5f, args.b = 0.25f, args.f16 = true;  // as measure_peak: normal in fp16
  Buffer out = cx.dev.allocate(uint64_t{threads} * 4, "peak probe output");
  args.out = out;
  Recorder rec(cx.dev, timed_recorder(cx.dev));
  ops::fma_probe(cx.dev, rec, args);
  if (cx.sabotage(row.id)) rec.fill(out.ref().slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  seq.run();
  // Each thread's chains in double: x_c = a x_c + b from ((t mod 7) + c) / 1024. fp32 rounding
  // stays within ~1/(1 - a) ulps as the recurrence contracts; fp16 within a few of its ulps.
  const std::vector<float> got = cx.dev.download<float>(out, threads);
  Comparison cmp(f16 ? "fp16 chain sums" : "fp32 chain sums");
  for (uint32_t t : sample_indices(cx.rng, threads, 4096)) {
    double want = 0;
    for (uint32_t c = 0; c < chains; ++c) {
      double x = double(t % 7 + c) / 1024.0;
      for (uint32_t i = 0; i < k_iterations; ++i) x = x * args.a + args.b;
      want += x;
    }
    cmp.add(got[t], want, want, 0, f16 ? 4e-3 : 2e-4);
  }
  set_check(row, {cmp},
            std::to_string(threads) + " threads x " + std::to_string(chains) +
                " chains, sampled threads of the timed output");
  const double flops = 2.0 * chains * k_iterations * threads;
  set_timing(row, cx, time_runs(seq, cx.options.repeat), flops, "GFLOP/s", Basis::none);
  if (f16)
    cx.peak.fp16_gflops = row.rate;
  else
    cx.peak.fp32_gflops = row.rate;
}

// The tensor cores' rate with nothing else in the way: the ceiling of the KHR coopmat matmul.
// measure_coopmat_peak tries each listed fp16 x fp16 + fp32 shape; the row times the best and
// names the others' rates in its note.
void coopmat_row(Context& cx, Row& row) {
  if (const std::string why = ops::coopmat_probe_misfit(cx.dev.info()); !why.empty())
    throw Refused(why);
  const ops::CoopmatPeak p = ops::measure_coopmat_peak(cx.dev, 0.02);
  const uint64_t floats =
      uint64_t{p.workgroups} * ops::k_coopmat_probe_subgroups * p.shape.m * p.shape.n;
  Buffer out = cx.dev.allocate(floats * 4, "coopmat probe output");
  const ops::CoopmatProbeArgs args{.out = out,
                                   .shape = p.shape,
                                   .workgroups = p.workgroups,
                                   .iterations = p.iterations,
                                   .chains = p.chains};
  Recorder rec(cx.dev, timed_recorder(cx.dev));
  ops::coopmat_probe(cx.dev, rec, args);
  if (cx.sabotage(row.id)) rec.fill(out.ref().slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  seq.run();
  // Every element: sum over c of (c + iterations * K * a * b), exact (powers of two).
  double want = 0;
  for (uint32_t c = 0; c < p.chains; ++c)
    want += c + double(p.iterations) * p.shape.k * args.a * args.b;
  const std::vector<float> got = cx.dev.download<float>(out, floats);
  Comparison cmp("accumulator sums");
  for (uint32_t i : sample_indices(cx.rng, static_cast<uint32_t>(floats), 4096))
    cmp.add(got[i], want, 0, 1e-30, 0);  // exact
  cmp.add(got[0], want, 0, 1e-30, 0);    // where a sabotage writes
  std::string shapes;
  for (const auto& [shape, gflops] : p.per_shape)
    shapes += (shapes.empty() ? "" : ", ") + std::to_string(shape.m) + "x" +
              std::to_string(shape.n) + "x" + std::to_string(shape.k) + " " +
              std::to_string(static_cast<long>(gflops)) + " GFLOP/s";
  set_check(row, {cmp},
            p.shape.describe() + ", " + std::to_string(p.workgroups) + " workgroups x " +
                std::to_string(ops::k_coopmat_probe_subgroups) + " subgroups x " +
                std::to_string(p.chains) +
                " accumulators, sampled elements of the timed "
                "output; each listed shape's best: " +
                shapes +
                "; its fragments loaded from shared memory before every product, "
                "staged as uvec4: " +
                std::to_string(static_cast<long>(p.shared_vec4_gflops)) +
                " GFLOP/s, as float16_t: " +
                std::to_string(static_cast<long>(p.shared_half_gflops)) + " GFLOP/s");
  const double flops = 2.0 * p.shape.m * p.shape.n * p.shape.k * p.chains * p.iterations *
                       double(p.workgroups) * ops::k_coopmat_probe_subgroups;
  set_timing(row, cx, time_runs(seq, cx.options.repeat), flops, "GFLOP/s", Basis::none);
  cx.peak.coopmat_gflops = row.rate;
}

void copy_row(Context& cx, Row& row) {
  const ops::DevicePeak& p = found(cx);
  // The check: the same kernel on a small random buffer (an odd size when scalar), exact.
  {
    const uint64_t words = p.copy_vec4 ? (1u << 20) : (1u << 20) + 3;
    const std::vector<float> src = uniform(cx.rng, words);
    Buffer s = cx.dev.allocate(words * 4, "copy check source");
    Buffer d = cx.dev.allocate(words * 4, "copy check destination");
    cx.dev.upload(s, src);
    Recorder rec(cx.dev);
    ops::copy_probe(cx.dev, rec, s, d, words, p.copy_vec4, p.copy_texel);
    if (cx.sabotage(row.id)) rec.fill(d.ref().slice(0, 4), k_wrong_bits);
    rec.finish().run();
    const std::vector<float> got = cx.dev.download<float>(d, words);
    Comparison cmp("copied words");
    for (uint64_t i = 0; i < words; ++i) cmp.add(got[i], src[i], 0, 1e-30, 0);  // exact
    const char* how = p.copy_texel  ? " (4-vectors read through a texel view: this device's "
                                      "fastest copy)"
                      : p.copy_vec4 ? " (4-vectors)"
                                    : "";
    set_check(row, {cmp}, "the same kernel over " + std::to_string(words) + " random words" + how);
  }
  Buffer s = cx.dev.allocate(p.copy_bytes, "peak probe source");
  Buffer d = cx.dev.allocate(p.copy_bytes, "peak probe destination");
  Recorder rec(cx.dev, timed_recorder(cx.dev));
  ops::copy_probe(cx.dev, rec, s, d, p.copy_bytes / 4, p.copy_vec4, p.copy_texel);
  Sequence seq = rec.finish();
  seq.run();
  set_timing(row, cx, time_runs(seq, cx.options.repeat), 2.0 * double(p.copy_bytes), "GB/s",
             Basis::none);
  cx.peak.copy_gbytes_s = row.rate;
}

}  // namespace

std::vector<RowSpec> peak_rows() {
  return {
      {"peak/fp32_fma", "peak", "fp32 FMA peak (independent chains)",
       [](Context& cx, Row& r) { fma_row(cx, r, false); }},
      {"peak/fp16_fma", "peak", "fp16 FMA peak (float16_t chains)",
       [](Context& cx, Row& r) { fma_row(cx, r, true); }},
      {"peak/fp16_coopmat", "peak",
       "fp16 tensor-core peak (VK_KHR_cooperative_matrix products, fp32 accumulators)",
       coopmat_row},
      {"peak/copy", "peak", "shader copy bandwidth (read + write)", copy_row},
  };
}

}  // namespace vkf::bench
