#include "engine/ops/activation.h"
#include "reference/stored.h"
#include "tests/support/f16_storage.h"
#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("relu backward masks the gradient where the activation is not positive",
              "[shaders][activation]") {
  Device& dev = test::device();
  for (uint32_t n : {1u, 255u, 1000u, 70001u}) {
    auto h = test::random_floats(n, n, -1, 1);
    for (uint32_t i = 0; i < n; i += 3) h[i] = std::max(h[i], 0.0f);  // ReLU outputs: >= 0
    auto dh = test::random_floats(n, n + 1);
    Buffer bh = dev.allocate(n * 4, "h"), bdh = dev.allocate(n * 4, "dh");
    dev.upload(bh, h);
    dev.upload(bdh, dh);
    Recorder rec(dev);
    ops::relu_backward(dev, rec, bh, bdh, n);
    rec.finish().run();
    auto got = dev.download<float>(bdh, n);
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = h[i] > 0 ? dh[i] : 0.0;
    CHECK(test::tolerance_ratio(got, want, 1e-30, 0) <= 1.0);  // exact: a select, no arithmetic
  }
}

VKF_TEST_CASE("relu backward with f16 storage masks as the f32 kernel does",
              "[shaders][activation][f16]") {
  if (!test::has_storage16()) return;
  Device& dev = test::device();
  for (uint32_t n : {1u, 255u, 1001u, 70001u}) {
    auto h = ref::stored(test::random_floats(n, n, -1, 1), DType::f16);
    for (uint32_t i = 0; i < n; i += 3) h[i] = std::max(h[i], 0.0f);
    for (uint32_t i = 1; i < n; i += 7) h[i] = 6e-8f;  // an f16 subnormal: still positive
    const auto dh = ref::stored(test::random_floats(n, n + 1), DType::f16);
    Buffer bh = ref::upload_stored(dev, h, DType::f16, "h");
    Buffer bdh = ref::upload_stored(dev, dh, DType::f16, "dh");
    Recorder rec(dev);
    ops::relu_backward(dev, rec, bh, bdh, n, DType::f16);
    rec.finish().run();
    const auto got = ref::download_stored(dev, bdh, n, DType::f16);
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = h[i] > 0 ? dh[i] : 0.0;
    CHECK(test::tolerance_ratio(got, want, 1e-30, 0) <= 1.0);  // exact: a select
  }
  Recorder rec(dev);
  Buffer small = dev.allocate(8, "small");
  REQUIRE_THROWS_WITH(ops::relu_backward(dev, rec, small, small, 5, DType::f16),
                      Catch::Contains("5 f16 values"));
}
