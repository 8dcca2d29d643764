#include "engine/ops/activation.h"
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
