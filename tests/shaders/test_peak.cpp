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

VKF_TEST_CASE("copy probe: scalar and 4-vector copies, the rest untouched", "[shaders][peak]") {
  Device& dev = test::device();
  const uint64_t total = 70000;
  auto src = test::random_floats(total, 3);
  Buffer bs = dev.allocate(total * 4, "src"), bd = dev.allocate(total * 4, "dst");
  dev.upload(bs, src);
  for (bool vec4 : {false, true}) {
    const uint64_t words = vec4 ? 65540 : 65537;
    dev.upload(bd, std::vector<float>(total, test::k_poison));
    Recorder rec(dev);
    ops::copy_probe(dev, rec, bs, bd, words, vec4);
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
}
