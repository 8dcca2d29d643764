// Global gradient norm and Adam against the double references (engine/ops/adam.h).
// Tolerances: norm rtol 1e-5; after each Adam step w atol 1e-6 + rtol 1e-5, m atol 1e-7 + rtol
// 1e-5 (m cancels towards 0 for random-sign gradients), v atol 1e-12 + rtol 1e-5.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/ops/adam.h"
#include "engine/step_scalars.h"
#include "engine/tuning_file.h"
#include "reference/adam_case.h"
#include "reference/optim.h"
#include "tests/support/harness_self_test.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

StepScalars& scalars_of(Buffer& b) {
  return *reinterpret_cast<StepScalars*>(b.mapped());
}

Buffer new_step_buffer(Device& dev) {
  Buffer b = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  scalars_of(b) = StepScalars{};
  return b;
}

ops::GradNormResult run_grad_norm(Device& dev, const std::vector<std::vector<float>>& grads,
                                  uint32_t wg, uint32_t max_groups) {
  std::vector<Buffer> bufs;
  ops::GradNormArgs a{.workgroup_size = wg, .max_groups = max_groups};
  for (const auto& g : grads) {
    bufs.push_back(dev.allocate(g.size() * 4, "grads"));
    dev.upload(bufs.back(), g);
    a.grads.push_back({bufs.back(), uint32_t(g.size())});
  }
  Buffer partials = dev.allocate(ops::grad_norm_partials_bytes(a), "partials");
  Buffer out = dev.allocate(16, "norm");
  dev.upload(partials, std::vector<float>(partials.size() / 4, test::k_poison));
  dev.upload(out, std::vector<float>(4, test::k_poison));
  a.partials = partials;
  a.out = out;
  Recorder rec(dev);
  ops::grad_norm(dev, rec, a);
  rec.finish().run();
  return dev.download<ops::GradNormResult>(out, 1)[0];
}

}  // namespace

VKF_TEST_CASE("grad_norm matches the reference for every specialization",
              "[shaders][adam][grad_norm]") {
  Device& dev = test::device();
  std::vector<std::vector<std::vector<float>>> cases = {
      {test::random_floats(1, 1)},
      {test::random_floats(1000, 2)},
      {test::random_floats(300001, 3, -0.01f, 0.01f)},
      {test::random_floats(37, 4), test::random_floats(70001, 5), test::random_floats(3, 6)},
  };
  for (const auto& grads : cases) {
    double want = ref::grad_norm(grads);
    for (uint32_t wg : {32u, 256u, 1024u}) {
      // Sizes over the device's (a profile's 128 or 256: scripts/test-profiles) are refused
      // by name, tested with workgroup_size_misfit.
      if (wg > dev.info().max_workgroup_invocations) continue;
      for (uint32_t max_groups : {1u, 7u, 1024u}) {
        INFO(grads.size() << " buffers, first of " << grads[0].size() << ", wg " << wg
                          << ", max_groups " << max_groups);
        auto r = run_grad_norm(dev, grads, wg, max_groups);
        auto again = run_grad_norm(dev, grads, wg, max_groups);
        CHECK(std::memcmp(&r, &again, sizeof r) == 0);  // deterministic, bit for bit
        CHECK(std::fabs(r.norm - want) <= 1e-5 * want);
        CHECK(std::fabs(r.sum_squares - want * want) <= 2e-5 * want * want);
        CHECK(r.nonfinite == 0);
        CHECK(r.reserved == 0);
      }
    }
  }
}

VKF_TEST_CASE("grad_norm flags NaN, Inf and overflow", "[shaders][adam][grad_norm]") {
  Device& dev = test::device();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity(), 3e30f}) {
    INFO("bad value " << bad);
    auto g = test::random_floats(5000, 9);
    g[4321] = bad;
    CHECK(run_grad_norm(dev, {test::random_floats(100, 1), g}, 256, 1024).nonfinite == 1);
  }
  CHECK(run_grad_norm(dev, {test::random_floats(5000, 9, -1e10f, 1e10f)}, 256, 1024).nonfinite ==
        0);
}

namespace {

struct AdamCase {
  const char* name;
  ops::AdamOptions options;
  float grad_scale;
};

}  // namespace

VKF_TEST_CASE("adam follows the reference over warmup and decay", "[shaders][adam]") {
  Device& dev = test::device();
  const uint32_t n = 1001;
  ops::AdamOptions noam{.lr = 2.0f, .d_model = 64.0f, .warmup_steps = 4.0f};
  ops::AdamOptions clipped = noam;
  clipped.max_grad_norm = 1.0f;  // random [-1, 1) gradients of 1001 elements have norm ~18
  ops::AdamOptions adamw = noam;
  adamw.weight_decay = 0.01f;
  ops::AdamOptions constant{.schedule = ops::LrSchedule::constant, .lr = 1e-3f};
  constant.max_grad_norm = 100.0f;  // above the norm: no clipping
  ops::AdamOptions no_norm = noam;
  no_norm.skip_nonfinite = false;
  const AdamCase cases[] = {
      {"schedule", noam, 1.0f},        {"schedule, grad_scale 0.5", noam, 0.5f},
      {"clipping", clipped, 0.25f},    {"adamw", adamw, 1.0f},
      {"constant lr", constant, 1.0f}, {"no norm buffer", no_norm, 2.0f}};
  using Reads = ops::AdamConfig::Reads;
  // Workgroup sizes, elements an invocation (none divides 1001) and both read paths.
  const ops::AdamConfig configs[] = {{32, 1, Reads::storage},   {256, 1, Reads::storage},
                                     {1024, 1, Reads::storage}, {256, 4, Reads::texel},
                                     {64, 8, Reads::storage},   {1024, 2, Reads::texel},
                                     {32, 8, Reads::texel}};
  for (const auto& c : cases) {
    for (const ops::AdamConfig& config : configs) {
      const uint32_t wg = config.workgroup_size;
      if (wg > dev.info().max_workgroup_invocations) continue;  // refused by name (a profile's)
      INFO(c.name << ", " << ops::describe(config));
      auto w0 = test::random_floats(n, 100);
      ref::AdamState state{{w0.begin(), w0.end()}, std::vector<double>(n), std::vector<double>(n)};
      Buffer bw = dev.allocate(n * 4, "w"), bg = dev.allocate(n * 4, "g");
      Buffer bm = dev.allocate(n * 4, "m"), bv = dev.allocate(n * 4, "v");
      Buffer step = new_step_buffer(dev);
      Buffer norm = dev.allocate(16, "norm");
      ops::GradNormArgs na{.grads = {{bg, n}}, .out = norm, .workgroup_size = wg};
      Buffer partials = dev.allocate(ops::grad_norm_partials_bytes(na), "partials");
      na.partials = partials;
      dev.upload(bw, w0);
      dev.upload(bm, std::vector<float>(n, 0.0f));
      dev.upload(bv, std::vector<float>(n, 0.0f));
      // Recorded once, replayed for each step with new scalars and gradients.
      Recorder rec(dev);
      ops::grad_norm(dev, rec, na);
      ops::adam(
          dev, rec,
          {.params = bw,
           .grads = bg,
           .m = bm,
           .v = bv,
           .step = step,
           .grad_norm = c.options.skip_nonfinite || c.options.max_grad_norm > 0 ? BufferRef(norm)
                                                                                : BufferRef{},
           .n = n,
           .options = c.options,
           .config = config});
      Sequence seq = rec.finish();
      for (uint32_t s = 1; s <= 10; ++s) {  // warmup is 4 steps: both phases of the schedule
        INFO("step " << s);
        auto g = test::random_floats(n, 1000 + s);
        dev.upload(bg, g);
        scalars_of(step).step = s;
        scalars_of(step).grad_scale = c.grad_scale;
        scalars_of(step).lr_scale = s == 7 ? 0.5f : 1.0f;
        seq.run();
        ref::adam_step(state, g, c.options, s, c.grad_scale, s == 7 ? 0.5 : 1.0,
                       ref::grad_norm({g}));
        CHECK(test::tolerance_ratio(dev.download<float>(bw, n), state.w, 1e-6, 1e-5) <= 1.0);
        CHECK(test::tolerance_ratio(dev.download<float>(bm, n), state.m, 1e-7, 1e-5) <= 1.0);
        CHECK(test::tolerance_ratio(dev.download<float>(bv, n), state.v, 1e-12, 1e-5) <= 1.0);
      }
    }
  }
}

VKF_TEST_CASE("adam's schedule matches the paper's formula", "[shaders][adam]") {
  ops::AdamOptions o{.lr = 1.0f, .d_model = 512.0f, .warmup_steps = 4000.0f};
  // Peak at step == warmup: d^-0.5 * warmup^-0.5.
  CHECK(std::fabs(ref::adam_learning_rate(o, 4000, 1.0) - 1.0 / std::sqrt(512.0 * 4000.0)) < 1e-12);
  CHECK(ref::adam_learning_rate(o, 100, 1.0) < ref::adam_learning_rate(o, 200, 1.0));
  CHECK(ref::adam_learning_rate(o, 9000, 1.0) < ref::adam_learning_rate(o, 8000, 1.0));
  CHECK(ref::adam_learning_rate(o, 0, 1.0) == ref::adam_learning_rate(o, 1, 1.0));
}

VKF_TEST_CASE("adam skips a step with a non-finite gradient", "[shaders][adam]") {
  Device& dev = test::device();
  const uint32_t n = 300;
  auto w0 = test::random_floats(n, 1);
  auto g = test::random_floats(n, 2);
  g[17] = std::numeric_limits<float>::infinity();
  for (bool skip : {true, false}) {
    INFO("skip_nonfinite " << skip);
    Buffer bw = dev.allocate(n * 4, "w"), bg = dev.allocate(n * 4, "g");
    Buffer bm = dev.allocate(n * 4, "m"), bv = dev.allocate(n * 4, "v");
    Buffer step = new_step_buffer(dev), norm = dev.allocate(16, "norm");
    ops::GradNormArgs na{.grads = {{bg, n}}, .out = norm};
    Buffer partials = dev.allocate(ops::grad_norm_partials_bytes(na), "partials");
    na.partials = partials;
    dev.upload(bw, w0);
    dev.upload(bg, g);
    dev.upload(bm, std::vector<float>(n, 0.0f));
    dev.upload(bv, std::vector<float>(n, 0.0f));
    ops::AdamOptions o;
    o.skip_nonfinite = skip;
    Recorder rec(dev);
    ops::grad_norm(dev, rec, na);
    ops::adam(dev, rec,
              {.params = bw,
               .grads = bg,
               .m = bm,
               .v = bv,
               .step = step,
               .grad_norm = norm,
               .n = n,
               .options = o});
    rec.finish().run();
    CHECK(dev.download<ops::GradNormResult>(norm, 1)[0].nonfinite == 1);
    auto w = dev.download<float>(bw, n);
    if (skip) {
      CHECK(w == w0);
      CHECK(dev.download<float>(bm, n) == std::vector<float>(n, 0.0f));
    } else {
      CHECK(!std::isfinite(w[17]));
    }
  }
}

// A texel view has a device limit on its elements (and an offset alignment): a chosen (default
// or tuned) texel configuration runs through storage bindings where a buffer cannot be viewed;
// a forced one says why it cannot run.
VKF_TEST_CASE("adam says which buffer a texel view cannot cover", "[shaders][adam]") {
  Device& dev = test::device();
  const uint32_t n = 777;
  Buffer bw = dev.allocate(n * 4, "w"), bg = dev.allocate(n * 4, "g");
  Buffer bm = dev.allocate(n * 4, "m"), bv = dev.allocate(n * 4, "v");
  const ops::AdamArgs a{.params = bw, .grads = bg, .m = bm, .v = bv, .n = n};
  CHECK(ops::adam_texel_misfit(dev.info(), a).empty());
  DeviceInfo small = dev.info();
  small.max_texel_buffer_elements = n - 1;
  CHECK_THAT(ops::adam_texel_misfit(small, a),
             Catch::StartsWith("params: ") && Catch::Contains("outside 1..776"));
}

// The tuned configuration is what adam() runs when none is forced, and is passed over, saying
// why, where the device cannot run it.
VKF_TEST_CASE("adam runs the tuned configuration of its shape class", "[shaders][adam]") {
  const uint32_t n = 777;
  const ops::AdamConfig texel{64, 2, ops::AdamConfig::Reads::texel};
  auto dev = test::new_device();
  TuningFile file;
  file.key = TuningKey::of(dev->info());
  TunedAdam t;
  t.shape_class = ops::adam_shape_class({n});
  t.shape = {n};
  t.config = texel;
  file.of<ops::AdamFamily>().push_back(t);
  t.shape_class = ops::adam_shape_class({n << 12});
  t.config.workgroup_size = 2048;  // more than any device runs
  file.of<ops::AdamFamily>().push_back(t);
  const ops::AdamConfig fallback = ops::adam_default_config(dev->info());
  CHECK(ops::choose_adam_config(*dev, {n}) == fallback);
  dev->set_tuning(make_tuning(file, "test"));
  std::string why;
  CHECK(ops::choose_adam_config(*dev, {n}, &why) == texel);
  CHECK_THAT(why, Catch::Contains("tuned for f32/n64k (wg64 x2 texel"));
  CHECK(ops::choose_adam_config(*dev, {n << 12}, &why) == fallback);
  CHECK_THAT(why, Catch::Contains("wg2048 x2 texel for f32/n16m was passed over"));

  // One step on what choose_adam_config chose (the harness leaves the config to the engine):
  // the texel configuration's results.
  ref::AdamCase c;
  c.n = n;
  std::mt19937 rng(1);
  const ref::AdamRun run(*dev, c, rng);
  Recorder rec(*dev);
  run.record(rec);
  rec.finish().run();
  for (const ref::Comparison& cmp : run.compare(ref::adam_tolerance())) {
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
}

// One step through the Adam harness (reference/adam_case.h), as the tuner's guard and `vkf
// bench` check it: every configuration on random moments, at a step in the warm-up and one
// after it, clipped and with decay.
VKF_TEST_CASE("adam: one step from random moments in every configuration", "[shaders][adam]") {
  Device& dev = test::device();
  using Reads = ops::AdamConfig::Reads;
  const ops::AdamConfig configs[] = {{32, 1, Reads::storage}, {1024, 1, Reads::storage},
                                     {256, 4, Reads::texel},  {64, 8, Reads::storage},
                                     {1024, 2, Reads::texel}, {32, 8, Reads::texel}};
  for (const ops::AdamConfig& config : configs) {
    if (config.workgroup_size > dev.info().max_workgroup_invocations) continue;
    for (uint32_t step : {3u, 9000u}) {
      ref::AdamCase c;
      c.n = 1001;
      c.options = {.lr = 2.0f, .d_model = 64.0f, .warmup_steps = 4.0f, .weight_decay = 0.01f};
      c.options.max_grad_norm = 1.0f;  // random gradients of 1001 elements have norm ~18
      c.config = config, c.step = step, c.grad_scale = 0.5f, c.lr_scale = 0.75f;
      INFO(c.describe());
      std::mt19937 rng(step);
      const ref::AdamRun run(dev, c, rng);
      Recorder rec(dev);
      run.record(rec);
      rec.finish().run();
      for (const ref::Comparison& cmp : run.compare(ref::adam_tolerance())) {
        INFO(cmp.describe());
        CHECK(cmp.ok());
      }
    }
  }
}

VKF_TEST_CASE("the adam harness fails an unwritten or a corrupted output", "[shaders][adam]") {
  Device& dev = test::device();
  ref::AdamCase c;
  c.n = 333;
  const ref::AdamTolerance tol = ref::adam_tolerance();
  std::mt19937 rng(5);
  const ref::AdamRun unwritten(dev, c, rng);  // w, m and v as they were: no step
  for (const ref::Comparison& cmp : unwritten.compare(tol)) {
    INFO("unwritten: " << cmp.describe());
    CHECK(!cmp.ok());
  }
  test::check_corruption_caught(
      dev, [&] { return ref::AdamRun(dev, c, rng); },
      [&](const ref::AdamRun& run) { return run.compare(tol); }, "w");
}

VKF_TEST_CASE("adam checks its arguments", "[shaders][adam]") {
  Device& dev = test::device();
  Buffer b = dev.allocate(400, "b"), step = new_step_buffer(dev);
  Recorder rec(dev);
  ops::AdamArgs a{.params = b, .grads = b, .m = b, .v = b, .step = step, .n = 101};
  REQUIRE_THROWS_WITH(ops::adam(dev, rec, a), Catch::Contains("404"));
  a.n = 100;
  REQUIRE_THROWS_WITH(ops::adam(dev, rec, a), Catch::Contains("grad_norm is missing"));
}
