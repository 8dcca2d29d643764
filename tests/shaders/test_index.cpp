// 1-D kernels (shaders/common/index.glsl) over more than 65535 workgroups, which groups_1d folds
// into a second row of workgroups: every element must be reached once. Before global_index_1d
// became a macro, the shaders (which include index.glsl before their local-size layout) strode
// rows by gl_NumWorkGroups.x instead of gl_NumWorkGroups.x * 256, so Adam left parameters past
// 16.7M untouched (vkf bench's Adam row caught it on lavapipe's 33.5M-parameter buffer).
#include <cstring>

#include "engine/ops/adam.h"
#include "engine/ops/basic.h"
#include "engine/step_scalars.h"
#include "reference/optim.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

// Into a second row of 65535 workgroups of 256, not a multiple of anything; 103 MB a buffer
// (lavapipe binds up to 128 MiB).
constexpr uint32_t k_n = 65535u * 256u + 9000001u;

}  // namespace

VKF_TEST_CASE("1-D kernels reach every element past 65535 workgroups", "[shaders][index]") {
  Device& dev = test::device();
  if (dev.info().max_storage_buffer_range < uint64_t{k_n} * 4)
    VKF_SKIP("storage buffers of " << dev.info().max_storage_buffer_range << " bytes");
  std::vector<float> x(k_n), y(k_n);
  for (uint32_t i = 0; i < k_n; ++i) {
    x[i] = float(i % 1000) * 0.001f;
    y[i] = float(i % 7);
  }
  Buffer bx = dev.allocate(uint64_t{k_n} * 4, "x"), by = dev.allocate(uint64_t{k_n} * 4, "y");
  Buffer scalars = dev.allocate(16, "scalars", MemoryKind::host);
  reinterpret_cast<float*>(scalars.mapped())[0] = 2.0f;
  dev.upload(bx, x);
  dev.upload(by, y);
  Recorder rec(dev);
  ops::axpy(dev, rec, bx, by, scalars, 0, k_n);
  rec.finish().run();
  const std::vector<float> got = dev.download<float>(by, k_n);
  uint32_t wrong = 0, first_wrong = k_n;
  for (uint32_t i = 0; i < k_n; ++i)
    if (got[i] != 2.0f * x[i] + y[i]) {
      ++wrong;
      first_wrong = std::min(first_wrong, i);
    }
  INFO("first wrong element " << first_wrong);
  CHECK(wrong == 0);
}

VKF_TEST_CASE("Adam updates every parameter of a chunk past 16.7M", "[shaders][index][adam]") {
  Device& dev = test::device();
  if (dev.info().max_storage_buffer_range < uint64_t{k_n} * 4)
    VKF_SKIP("storage buffers of " << dev.info().max_storage_buffer_range << " bytes");
  const std::vector<float> w = test::random_floats(k_n, 1), g = test::random_floats(k_n, 2);
  const std::vector<float> zeros(k_n, 0.0f);
  Buffer bw = dev.allocate(uint64_t{k_n} * 4, "w"), bg = dev.allocate(uint64_t{k_n} * 4, "g");
  Buffer bm = dev.allocate(uint64_t{k_n} * 4, "m"), bv = dev.allocate(uint64_t{k_n} * 4, "v");
  Buffer step = dev.allocate(sizeof(StepScalars), "step", MemoryKind::host);
  Buffer norm = dev.allocate(16, "norm");
  StepScalars st;
  st.step = 3;
  std::memcpy(step.mapped(), &st, sizeof st);
  dev.upload(bw, w);
  dev.upload(bg, g);
  dev.upload(bm, zeros);
  dev.upload(bv, zeros);
  dev.upload(norm, std::vector<uint32_t>{0, 0, 0, 0});
  const ops::AdamOptions o;
  Recorder rec(dev);
  ops::adam(dev, rec,
            {.params = bw,
             .grads = bg,
             .m = bm,
             .v = bv,
             .step = step,
             .grad_norm = norm,
             .n = k_n,
             .options = o});
  rec.finish().run();
  ref::AdamState want{{w.begin(), w.end()}, std::vector<double>(k_n), std::vector<double>(k_n)};
  ref::adam_step(want, g, o, st.step, 1.0, 1.0, 0.0);
  CHECK(test::tolerance_ratio(dev.download<float>(bw, k_n), want.w, 1e-6, 1e-5) <= 1.0);
  CHECK(test::tolerance_ratio(dev.download<float>(bv, k_n), want.v, 1e-12, 1e-5) <= 1.0);
}
