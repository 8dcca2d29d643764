// Standalone dropout: the mask is the host Philox twin's, the same in forward and backward and
// run to run, different across steps and tensors, and drops close to p of the elements.
#include <cmath>
#include <cstring>

#include "engine/ops/dropout.h"
#include "engine/philox.h"
#include "engine/step_scalars.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

struct Run {
  std::vector<float> fwd, bwd;
};

// Forward on x and backward on dy = x, in one recording.
Run run(const std::vector<float>& x, float p, uint32_t seed, uint32_t step, uint32_t tensor) {
  Device& dev = test::device();
  const uint32_t n = uint32_t(x.size());
  Buffer bx = dev.allocate(n * 4, "x"), by = dev.allocate(n * 4, "y"),
         bd = dev.allocate(n * 4, "dx");
  dev.upload(bx, x);
  dev.upload(by, std::vector<float>(n, test::k_poison));
  dev.upload(bd, std::vector<float>(n, test::k_poison));
  Buffer st = dev.allocate(sizeof(StepScalars), "step", MemoryKind::host);
  StepScalars s;
  s.seed = seed;
  s.step = step;
  std::memcpy(st.mapped(), &s, sizeof s);
  Recorder rec(dev);
  ops::dropout_forward(dev, rec, {bx, by, p > 0 ? st.ref() : BufferRef{}, n, p, tensor});
  ops::dropout_backward(dev, rec, {bx, bd, p > 0 ? st.ref() : BufferRef{}, n, p, tensor});
  rec.finish().run();
  return {dev.download<float>(by, n), dev.download<float>(bd, n)};
}

}  // namespace

VKF_TEST_CASE("dropout matches the host Philox mask", "[shaders][dropout]") {
  for (uint32_t n : {1u, 7u, 1000u, 70001u}) {
    for (float p : {0.0f, 0.1f, 0.5f}) {
      auto x = test::random_floats(n, n, 0.5f, 1.5f);  // never 0, so zeros are drops
      Run r = run(x, p, 42, 9, 5);
      std::vector<double> want(n);
      for (uint32_t i = 0; i < n; ++i) want[i] = double(x[i]) * dropout_scale(p, 42, 9, 5, i);
      CHECK(test::tolerance_ratio(r.fwd, want, 0.0, 1e-6) <= 1.0);
      for (uint32_t i = 0; i < n; ++i) REQUIRE((r.fwd[i] == 0.0f) == (want[i] == 0.0));
      CHECK(r.fwd == r.bwd);  // the backward regenerates the forward's mask
    }
  }
}

VKF_TEST_CASE("dropout masks repeat run to run and differ across steps and tensors",
              "[shaders][dropout]") {
  std::vector<float> ones(4096, 1.0f);
  Run a = run(ones, 0.3f, 1, 1, 1), b = run(ones, 0.3f, 1, 1, 1);
  CHECK(a.fwd == b.fwd);
  CHECK(run(ones, 0.3f, 1, 2, 1).fwd != a.fwd);
  CHECK(run(ones, 0.3f, 1, 1, 2).fwd != a.fwd);
  CHECK(run(ones, 0.3f, 2, 1, 1).fwd != a.fwd);
}

VKF_TEST_CASE("dropout drops close to p of the elements", "[shaders][dropout]") {
  const uint32_t n = 1 << 20;
  std::vector<float> ones(n, 1.0f);
  for (float p : {0.1f, 0.3f, 0.5f}) {
    Run r = run(ones, p, 7, 3, 11);
    double dropped = 0, sum = 0;
    for (float v : r.fwd) {
      dropped += v == 0.0f;
      sum += v;
    }
    double sigma = std::sqrt(p * (1 - p) / n);
    CHECK(std::fabs(dropped / n - p) < 5 * sigma);
    // Inverted dropout keeps the expectation: mean of y close to 1.
    CHECK(std::fabs(sum / n - 1.0) < 5 * sigma / (1 - p));
  }
}

VKF_TEST_CASE("dropout rejects bad arguments", "[shaders][dropout]") {
  Device& dev = test::device();
  Buffer a = dev.allocate(64, "a"), b = dev.allocate(64, "b");
  Recorder rec(dev);
  REQUIRE_THROWS_WITH(ops::dropout_forward(dev, rec, {a, b, {}, 32, 0.0f, 0}),
                      Catch::Contains("fewer than 32"));
  REQUIRE_THROWS_WITH(ops::dropout_forward(dev, rec, {a, b, {}, 16, 0.5f, 0}),
                      Catch::Contains("step-scalar"));
  REQUIRE_THROWS_WITH(ops::dropout_forward(dev, rec, {a, a, {}, 16, 0.0f, 0}),
                      Catch::Contains("overlap"));
}
