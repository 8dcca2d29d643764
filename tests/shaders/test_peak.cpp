// The throughput probes (shaders/peak_fma.comp, peak_copy.comp) against plain references: the
// FMA chains in double (rtol 1e-5: the recurrence contracts, so rounding does not grow), the copy
// exact, with the outputs poisoned and sizes that are not multiples of the workgroup.
#include <cmath>

#include "engine/ops/peak.h"
#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("FMA probe: every thread's chains against a double reference", "[shaders][peak]") {
  Device& dev = test::device();
  for (uint32_t chains : {1u, 8u, 32u}) {
    const uint32_t threads = 1000, iterations = 40;
    const float a = 0.75f, b = 0.125f;
    Buffer out_buf = dev.allocate((threads + 5) * 4, "out");
    dev.upload(out_buf, std::vector<float>(threads + 5, test::k_poison));
    Recorder rec(dev);
    ops::fma_probe(dev, rec,
                   {.out = out_buf,
                    .threads = threads,
                    .iterations = iterations,
                    .chains = chains,
                    .a = a,
                    .b = b});
    rec.finish().run();
    std::vector<double> want(threads);
    for (uint32_t t = 0; t < threads; ++t) {
      for (uint32_t c = 0; c < chains; ++c) {
        double x = double(t % 7 + c) / 1024.0;
        for (uint32_t i = 0; i < iterations; ++i) x = x * a + b;
        want[t] += x;
      }
    }
    auto got = dev.download<float>(out_buf, threads + 5);
    INFO("chains " << chains);
    CHECK(test::tolerance_ratio({got.begin(), got.begin() + threads}, want, 0, 1e-5) <= 1.0);
    for (uint32_t t = threads; t < threads + 5; ++t) CHECK(got[t] == test::k_poison);
  }
  Recorder rec(dev);
  Buffer small = dev.allocate(16, "small");
  REQUIRE_THROWS_WITH(ops::fma_probe(dev, rec, {.out = small, .threads = 1, .iterations = 12}),
                      Catch::Contains("multiple of 8"));
  REQUIRE_THROWS_WITH(ops::fma_probe(dev, rec, {.out = small, .threads = 5, .iterations = 8}),
                      Catch::Contains("fewer than 5"));
  REQUIRE_THROWS_WITH(
      ops::fma_probe(dev, rec, {.out = small, .threads = 1, .iterations = 8, .chains = 33}),
      Catch::Contains("chains"));
}

VKF_TEST_CASE("fp16 FMA probe: chains in float16_t against a double reference", "[shaders][peak]") {
  Device& dev = test::device();
  if (!dev.info().fp16) VKF_SKIP(dev.info().name << " has no shaderFloat16");
  // x = x / 2 + 1/4 contracts to 0.5: each step's fp16 rounding (2^-11 near 0.5, whether the
  // FMA rounds once or through fp32) stays within a few ulps of the exact chain.
  const uint32_t threads = 999, iterations = 48, chains = 16;
  Buffer out_buf = dev.allocate((threads + 3) * 4, "out");
  dev.upload(out_buf, std::vector<float>(threads + 3, test::k_poison));
  Recorder rec(dev);
  ops::fma_probe(dev, rec,
                 {.out = out_buf,
                  .threads = threads,
                  .iterations = iterations,
                  .chains = chains,
                  .a = 0.5f,
                  .b = 0.25f,
                  .f16 = true});
  rec.finish().run();
  std::vector<double> want(threads);
  for (uint32_t t = 0; t < threads; ++t)
    for (uint32_t c = 0; c < chains; ++c) {
      double x = double(t % 7 + c) / 1024.0;
      for (uint32_t i = 0; i < iterations; ++i) x = x * 0.5 + 0.25;
      want[t] += x;
    }
  auto got = dev.download<float>(out_buf, threads + 3);
  CHECK(test::tolerance_ratio({got.begin(), got.begin() + threads}, want, 0, 4e-3) <= 1.0);
  for (uint32_t t = threads; t < threads + 3; ++t) CHECK(got[t] == test::k_poison);
}

VKF_TEST_CASE("copy probe: scalar, 4-vector and texel-view copies, the rest untouched",
              "[shaders][peak]") {
  Device& dev = test::device();
  const uint64_t total = 70000;
  auto src = test::random_floats(total, 3);
  Buffer bs = dev.allocate(total * 4, "src"), bd = dev.allocate(total * 4, "dst");
  dev.upload(bs, src);
  const bool texel_ok =
      texel_view_misfit(dev.info(), bs.ref(), VK_FORMAT_R32G32B32A32_SFLOAT).empty();
  if (!texel_ok) WARN("no RGBA32F texel view of the source on " << dev.info().name);
  for (int mode = 0; mode < (texel_ok ? 3 : 2); ++mode) {
    const bool vec4 = mode >= 1, texel = mode == 2;
    INFO((texel ? "texel view" : vec4 ? "4-vectors" : "words"));
    const uint64_t words = vec4 ? 65540 : 65537;
    dev.upload(bd, std::vector<float>(total, test::k_poison));
    Recorder rec(dev);
    ops::copy_probe(dev, rec, bs, bd, words, vec4, texel);
    rec.finish().run();
    std::vector<float> want(total, test::k_poison);
    std::copy(src.begin(), src.begin() + words, want.begin());
    CHECK(dev.download<float>(bd, total) == want);
  }
  Recorder rec(dev);
  REQUIRE_THROWS_WITH(ops::copy_probe(dev, rec, bs, bd, 6, true), Catch::Contains("multiple of 4"));
}

VKF_TEST_CASE("measure_peak gives positive rates", "[shaders][peak]") {
  const ops::DevicePeak peak = ops::measure_peak(test::device(), 0.002);
  CHECK(peak.gflops > 0);
  CHECK(peak.gbytes_s > 0);
  CHECK(peak.chains >= 8);
  CHECK(peak.threads > 0);
  CHECK(peak.copy_bytes > 0);
  CHECK(peak.gflops_f16 == 0);  // not asked for
  if (test::device().info().fp16) {
    const ops::DevicePeak with_f16 = ops::measure_peak(test::device(), 0.002, true);
    CHECK(with_f16.gflops_f16 > 0);
    CHECK(with_f16.chains_f16 >= 8);
  }
}
