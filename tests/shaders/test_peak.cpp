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

// The tensor-core probe (shaders/peak_coopmat.comp) runs for real only where the device lists
// VK_KHR_cooperative_matrix and glslc could build it: the Debian 13 tier's lavapipe, GPUs.
VKF_TEST_CASE("coopmat probe: every subgroup's block is exact", "[shaders][peak][coopmat]") {
  Device& dev = test::device();
  if (const std::string why = ops::coopmat_probe_misfit(dev.info()); !why.empty()) VKF_SKIP(why);
  for (const CoopmatShape& shape : dev.info().khr_coopmat_shapes) {
    if (!shape.f16_f32_subgroup()) continue;
    const bool by8 = shape.m % 8 == 0 && shape.n % 8 == 0 && shape.k % 8 == 0;
    for (uint32_t mode = 0; mode < (by8 ? 3u : 1u); ++mode)
      for (uint32_t chains : {1u, 3u}) {
        INFO(shape.describe() << ", operands " << mode << ", chains " << chains);
        const uint32_t groups = 3, iterations = 37;
        const uint64_t floats =
            uint64_t{groups} * ops::k_coopmat_probe_subgroups * shape.m * shape.n;
        Buffer out_buf = dev.allocate((floats + 5) * 4, "out");
        dev.upload(out_buf, std::vector<float>(floats + 5, test::k_poison));
        Recorder rec(dev);
        ops::coopmat_probe(dev, rec,
                           {.out = out_buf,
                            .shape = shape,
                            .workgroups = groups,
                            .iterations = iterations,
                            .chains = chains,
                            .a = 0.25f,
                            .b = 0.125f,
                            .operands = static_cast<ops::CoopmatOperands>(mode)});
        rec.finish().run();
        // Powers of two: every partial sum is exact in fp32.
        double want = 0;
        for (uint32_t c = 0; c < chains; ++c) want += c + iterations * shape.k * 0.25 * 0.125;
        const std::vector<float> got = dev.download<float>(out_buf, floats + 5);
        uint64_t wrong = 0;
        for (uint64_t i = 0; i < floats; ++i) wrong += got[i] != want;
        CHECK(wrong == 0);
        for (uint64_t i = floats; i < floats + 5; ++i) CHECK(got[i] == test::k_poison);
      }
  }
  const CoopmatShape shape = dev.info().khr_coopmat_shapes.front();
  Recorder rec(dev);
  Buffer small = dev.allocate(16, "small");
  CoopmatShape unlisted = shape;
  unlisted.m = 24;
  REQUIRE_THROWS_WITH(ops::coopmat_probe(dev, rec, {.out = small, .shape = unlisted}),
                      Catch::Contains("not a listed shape"));
}

VKF_TEST_CASE("measure_coopmat_peak times every listed fp16 shape, or says why it cannot",
              "[shaders][peak][coopmat]") {
  Device& dev = test::device();
  const std::string why = ops::coopmat_probe_misfit(dev.info());
  if (!why.empty()) {
    REQUIRE_THROWS_WITH(ops::measure_coopmat_peak(dev, 0.001), Catch::Contains(why));
    VKF_SKIP(why);
  }
  const ops::CoopmatPeak peak = ops::measure_coopmat_peak(dev, 0.001);
  CHECK(peak.gflops > 0);
  CHECK(peak.shape.f16_f32_subgroup());
  CHECK(peak.chains >= 4);
  CHECK(peak.shared_vec4_gflops > 0);
  CHECK(peak.shared_half_gflops > 0);
  size_t shapes = 0;
  for (const CoopmatShape& s : dev.info().khr_coopmat_shapes) shapes += s.f16_f32_subgroup();
  REQUIRE(peak.per_shape.size() == shapes);
  for (const auto& [shape, gflops] : peak.per_shape) CHECK(gflops > 0);
}
