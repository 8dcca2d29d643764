// Label-smoothed cross-entropy, its totals and log-softmax against the double references, every
// specialization forced, in f32 and f16 storage. The f16 inputs are rounded to f16 first, so the
// references see exactly what the kernels read. Cross-entropy is set up, run and compared by
// the harness it shares with the tuner's correctness guard (reference/cross_entropy_case.h,
// which gives its tolerances). log-softmax: 2e-5 + 1e-5 in f32, + 1e-3 in f16 (one more
// rounding when stored); log-sum-exp, an fp32 output in either dtype, 2e-5 + 1e-5.
#include <cmath>
#include <random>

#include "engine/ops/loss.h"
#include "engine/ops/loss_choice.h"
#include "reference/cross_entropy_case.h"
#include "reference/layer_norm.h"  // to_double
#include "reference/loss.h"
#include "reference/stored.h"
#include "tests/support/bare_device.h"
#include "tests/support/f16_storage.h"
#include "tests/support/harness_self_test.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

using Subgroup = ops::RowKernelConfig::Subgroup;
using Reads = ops::RowKernelConfig::Reads;
using Grad = ref::CrossEntropyCase::Grad;

struct Shape {
  uint32_t rows, vocab;
};
const Shape k_shapes[] = {{1, 1}, {3, 5}, {7, 37}, {16, 1000}, {3, 37003}};

// Every workgroup size and reduction; for cross-entropy each through both read paths (texel
// views and storage buffers), log_softmax reading storage buffers only.
std::vector<ops::RowKernelConfig> all_configs(const Device& dev, bool both_reads = true) {
  std::vector<ops::RowKernelConfig> out;
  const auto reads_list = both_reads ? std::vector<Reads>{Reads::storage, Reads::texel}
                                     : std::vector<Reads>{Reads::automatic};
  for (auto reads : reads_list)
    for (uint32_t wg : {32u, 64u, 256u, 1024u}) {
      // A size over the device's (a profile's: scripts/test-profiles) is refused by name.
      if (wg > dev.info().max_workgroup_invocations) continue;
      out.push_back({wg, Subgroup::off, reads});
      if (dev.info().subgroup_arithmetic) out.push_back({wg, Subgroup::on, reads});
    }
  return out;
}

using ops::describe;  // "wg256 subgroup texel"

constexpr ref::Tolerance k_lse_tol{2e-5, 1e-5};  // log_sum_exp: fp32 in either dtype
ref::Tolerance log_softmax_tolerance(DType t) {
  return {2e-5, t == DType::f16 ? 1e-3 : 1e-5};
}

bool within(const std::vector<float>& got, const std::vector<double>& want, ref::Tolerance tol) {
  return test::tolerance_ratio(got, want, tol.atol, tol.rtol) <= 1.0;
}

// A cross-entropy case: the shape, padding id, smoothing and gradient scale; the rest as the
// harness's defaults (f32, the engine's configuration, a separate gradient, no totals).
ref::CrossEntropyCase ce_case(uint32_t rows, uint32_t vocab, int32_t pad_id, float eps,
                              float grad_scale = 1.0f) {
  ref::CrossEntropyCase c;
  c.rows = rows, c.vocab = vocab, c.pad_id = pad_id;
  c.label_smoothing = eps, c.grad_scale = grad_scale;
  return c;
}

// Runs c on `in` through the harness (outputs poisoned first); returns the run to compare or
// read.
ref::CrossEntropyRun run_cross_entropy(const ref::CrossEntropyCase& c,
                                       const ref::CrossEntropyInputs& in) {
  Device& dev = test::device();
  ref::CrossEntropyRun run(dev, c, in);
  Recorder rec(dev);
  run.record(rec);
  rec.finish().run();
  return run;
}

// Every comparison of c's run on `in` within the harness's tolerances.
void check_against_reference(const ref::CrossEntropyCase& c, const ref::CrossEntropyInputs& in) {
  const ref::CrossEntropyRun run = run_cross_entropy(c, in);
  for (const ref::Comparison& cmp :
       run.compare(ref::cross_entropy_tolerance(c.dtype, c.grad_scale))) {
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
}

// Every shape, label smoothing and specialization in storage type t, the gradient written
// separately, with the totals; with smoothing, also in place and without a gradient.
void check_cross_entropy(DType t) {
  const int32_t pad_id = 1;
  for (auto [rows, vocab] : k_shapes) {
    ref::CrossEntropyCase c = ce_case(rows, vocab, vocab > 1 ? pad_id : 7, 0.0f, 0.37f);
    c.dtype = t;
    c.totals = true;
    c.logit_range = 6.0f;
    std::mt19937 rng(rows * 7 + vocab);
    const ref::CrossEntropyInputs in = ref::random_cross_entropy_inputs(c, rng);
    for (float eps : {0.0f, 0.1f}) {
      c.label_smoothing = eps;
      for (const auto& cfg : all_configs(test::device()))
        for (Grad grad : {Grad::separate, Grad::in_place, Grad::none}) {
          if (eps == 0.0f && grad != Grad::separate) continue;
          // Forced texel reads past the device's texel views (a profile's 65536) are refused.
          if (cfg.reads == Reads::texel &&
              uint64_t{rows} * vocab > test::device().info().max_texel_buffer_elements)
            continue;
          c.config = cfg;
          c.grad = grad;
          INFO(c.describe());
          check_against_reference(c, in);
        }
    }
  }
}

// The f16 kernels do the f32 kernels' arithmetic on the values they load: on the same rounded
// logits, the fp32 outputs agree to fp32 rounding and the gradient is the f32 one rounded to f16
// (within one f16 ulp: 2^-10 relative, or 2^-24 below the normal range).
void check_f16_agrees_with_f32(uint32_t rows, uint32_t vocab, float eps,
                               const ops::RowKernelConfig& cfg) {
  ref::CrossEntropyCase c = ce_case(rows, vocab, -100, eps);
  c.config = cfg;
  c.dtype = DType::f16;
  INFO(c.describe());
  std::mt19937 rng(rows + vocab);
  const ref::CrossEntropyInputs in = ref::random_cross_entropy_inputs(c, rng);
  for (Grad grad : {Grad::separate, Grad::in_place}) {
    c.grad = grad;
    c.dtype = DType::f16;
    const ref::CrossEntropyOutputs half = run_cross_entropy(c, in).outputs();
    c.dtype = DType::f32;
    const ref::CrossEntropyOutputs full = run_cross_entropy(c, in).outputs();
    INFO(c.describe());
    CHECK(within(half.loss, ref::to_double(full.loss), {1e-7, 1e-6}));
    CHECK(within(half.logp, ref::to_double(full.logp), {1e-7, 1e-6}));
    CHECK(within(half.dlogits, ref::to_double(full.dlogits), {6e-8, 1e-3}));
  }
}

}  // namespace

VKF_TEST_CASE("cross_entropy matches the reference for every specialization",
              "[shaders][loss][cross_entropy]") {
  check_cross_entropy(DType::f32);
}

VKF_TEST_CASE("cross_entropy with f16 storage matches the reference for every specialization",
              "[shaders][loss][cross_entropy][f16]") {
  if (test::has_storage16()) check_cross_entropy(DType::f16);
}

VKF_TEST_CASE("cross_entropy with f16 storage agrees with f32 on the same inputs",
              "[shaders][loss][cross_entropy][f16]") {
  if (!test::has_storage16()) return;
  for (const auto& cfg : all_configs(test::device()))
    for (auto [rows, vocab] : {Shape{1, 300}, Shape{7, 1000}, Shape{3, 37003}})
      check_f16_agrees_with_f32(rows, vocab, 0.1f, cfg);
}

VKF_TEST_CASE("cross_entropy without gradient and in place", "[shaders][loss][cross_entropy]") {
  ref::CrossEntropyCase c = ce_case(9, 1001, 0, 0.1f);
  c.logit_range = 3.0f;
  std::mt19937 rng(5);
  const ref::CrossEntropyInputs in = ref::random_cross_entropy_inputs(c, rng);
  for (Grad grad : {Grad::none, Grad::in_place}) {
    c.grad = grad;
    INFO(c.describe());
    check_against_reference(c, in);
  }
}

VKF_TEST_CASE("cross_entropy of a batch of padding only is zero: loss, tokens, gradient",
              "[shaders][loss][cross_entropy]") {
  const uint32_t rows = 6, vocab = 300;
  ref::CrossEntropyCase c = ce_case(rows, vocab, 3, 0.1f);
  c.totals = true;
  const ref::CrossEntropyOutputs got =
      run_cross_entropy(
          c, {test::random_floats(size_t{rows} * vocab, 17), std::vector<int32_t>(rows, 3)})
          .outputs();
  CHECK(got.loss == std::vector<float>(rows, 0.0f));
  CHECK(got.dlogits == std::vector<float>(size_t{rows} * vocab, 0.0f));
  CHECK(got.totals.tokens == 0);
  CHECK(got.totals.loss_sum == 0.0f);
}

VKF_TEST_CASE("cross_entropy gradient passes a finite-difference check",
              "[shaders][loss][cross_entropy][gradcheck]") {
  for (uint32_t vocab : {2u, 7u, 37u}) {
    for (double eps : {0.0, 0.1}) {
      INFO("vocab " << vocab << " eps " << eps);
      const uint32_t rows = 2;
      auto logits = test::random_floats(size_t{rows} * vocab, vocab, -2.0f, 2.0f);
      std::vector<int32_t> targets{int32_t(vocab - 1), 0};
      const std::vector<float> got =
          run_cross_entropy(ce_case(rows, vocab, -100, float(eps)), {logits, targets})
              .outputs()
              .dlogits;
      // Central differences of the double forward, perturbing each logit in turn.
      std::vector<double> fd(logits.size());
      const double h = 1e-5;
      for (uint32_t r = 0; r < rows; ++r) {
        std::vector<double> x(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
        for (uint32_t v = 0; v < vocab; ++v) {
          auto xp = x, xm = x;
          xp[v] += h;
          xm[v] -= h;
          fd[r * vocab + v] = (ref::cross_entropy_row_loss(xp, targets[r], float(eps)) -
                               ref::cross_entropy_row_loss(xm, targets[r], float(eps))) /
                              (2 * h);
        }
      }
      auto analytic =
          ref::cross_entropy(logits, targets, rows, vocab, -100, float(eps), 1.0).dlogits;
      for (size_t i = 0; i < fd.size(); ++i) CHECK(std::fabs(analytic[i] - fd[i]) < 1e-8);
      CHECK(test::tolerance_ratio(got, fd, 1e-6, 1e-4) <= 1.0);
    }
  }
}

// The f16 gradient is not checked against finite differences (f16 logits cannot be perturbed by
// a small h): it is checked against the f32 kernel, which is, on the same rounded logits.
VKF_TEST_CASE("cross_entropy with f16 storage: gradient agrees with the f32 kernel",
              "[shaders][loss][cross_entropy][gradcheck][f16]") {
  if (!test::has_storage16()) return;
  for (uint32_t vocab : {2u, 7u, 37u})
    for (float eps : {0.0f, 0.1f}) check_f16_agrees_with_f32(2, vocab, eps, {});
}

VKF_TEST_CASE("cross_entropy replays with a new grad_scale", "[shaders][loss][cross_entropy]") {
  Device& dev = test::device();
  const uint32_t rows = 4, vocab = 50;
  ref::CrossEntropyRun run(dev, ce_case(rows, vocab, 0, 0.1f),
                           {test::random_floats(size_t{rows} * vocab, 11), {3, 0, 49, 7}});
  Recorder rec(dev);
  run.record(rec);
  Sequence seq = rec.finish();
  for (float scale : {1.0f, 0.25f, 1024.0f}) {
    run.set_grad_scale(scale);
    seq.run();
    for (const ref::Comparison& cmp : run.compare(ref::cross_entropy_tolerance(DType::f32, scale)))
      if (cmp.what() == "dlogits") {
        INFO("grad_scale " << scale << ": " << cmp.describe());
        CHECK(cmp.ok());
      }
  }
}

// The harness itself (reference/cross_entropy_case.h), so that no case above passes vacuously:
// outputs the kernel did not write (still poison) fail, and so does the gradient (or, without
// one, the row loss) overwritten after it (the tuner's sabotage), while the rest still passes.
VKF_TEST_CASE("the cross_entropy harness fails an unwritten or a corrupted output",
              "[shaders][loss][cross_entropy]") {
  Device& dev = test::device();
  for (Grad grad : {Grad::separate, Grad::in_place, Grad::none}) {
    ref::CrossEntropyCase c = ce_case(9, 301, 0, 0.1f, 0.37f);
    c.grad = grad;
    c.totals = true;
    INFO(c.describe());
    const ref::CrossEntropyTolerance tol = ref::cross_entropy_tolerance(c.dtype, c.grad_scale);
    const char* corrupted = grad == Grad::none ? "row loss" : "dlogits";
    std::mt19937 rng(3);
    const ref::CrossEntropyRun unwritten(dev, c, rng);
    for (const ref::Comparison& cmp : unwritten.compare(tol)) {
      INFO("unwritten: " << cmp.describe());
      // Without a gradient the logits are the one output that is no output: untouched, they pass.
      CHECK(cmp.ok() == (cmp.what() == "logits"));
    }
    // The totals read the row loss: corrupting it after them leaves them right.
    test::check_corruption_caught(
        dev, [&] { return ref::CrossEntropyRun(dev, c, rng); },
        [&](const ref::CrossEntropyRun& run) { return run.compare(tol); }, corrupted);
  }
}

VKF_TEST_CASE("cross_entropy checks its arguments", "[shaders][loss][cross_entropy]") {
  Device& dev = test::device();
  Buffer small = dev.allocate(64, "small");
  Recorder rec(dev);
  ops::CrossEntropyArgs a{.logits = small,
                          .targets = small,
                          .row_loss = small,
                          .row_logp = small,
                          .rows = 4,
                          .vocab = 100};
  REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, a),
                      Catch::Contains("logits") && Catch::Contains("1600"));
  a.vocab = 4;
  a.label_smoothing = 1.0f;
  REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, a), Catch::Contains("smoothing"));
  a.label_smoothing = 0.0f;
  a.config.workgroup_size = 48;
  REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, a), Catch::Contains("power of two"));
  a.config.workgroup_size = 0;
  // Texel reads asked for where no texel view can start: an error that says so (left to the
  // default, the same logits would be read from the storage buffer).
  if (const uint64_t align = dev.info().texel_buffer_alignment; align > 4) {
    Buffer big = dev.allocate(align * 2 + 64, "logits at an offset");
    ops::CrossEntropyArgs b = a;
    b.logits = big.ref().slice(4, 64);
    b.config.reads = ops::RowKernelConfig::Reads::texel;
    REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, b),
                        Catch::Contains("texel view") && Catch::Contains("no multiple of"));
  }
  a.dtype = DType::i32;
  REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, a), Catch::Contains("not supported"));
  if (dev.info().storage16) {  // f16 logits are sized in halves: [4, 8] fits in 64 bytes
    a.dtype = DType::f16;
    a.vocab = 8;
    CHECK_NOTHROW(ops::cross_entropy(dev, rec, a));
    a.vocab = 9;
    REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, a),
                        Catch::Contains("logits") && Catch::Contains("72"));
  }
}

VKF_TEST_CASE("cross_entropy and log_softmax refuse f16 on a device without 16-bit storage",
              "[shaders][loss][f16]") {
  test::BareDevice bare;
  Device& dev = bare.get();
  REQUIRE_FALSE(dev.info().storage16);
  Buffer b = dev.allocate(256, "b");
  Recorder rec(dev);
  ops::CrossEntropyArgs a{.dtype = DType::f16,
                          .logits = b,
                          .targets = b,
                          .row_loss = b,
                          .row_logp = b,
                          .rows = 2,
                          .vocab = 8};
  REQUIRE_THROWS_WITH(ops::cross_entropy(dev, rec, a), Catch::Contains("16-bit storage"));
  REQUIRE_THROWS_WITH(
      ops::log_softmax(dev, rec, {.dtype = DType::f16, .x = b, .y = b, .rows = 2, .cols = 8}),
      Catch::Contains("16-bit storage"));
}

namespace {

// Every shape and specialization in storage type t, out of place and in place.
void check_log_softmax(DType t) {
  Device& dev = test::device();
  for (auto [rows, cols] : k_shapes) {
    auto x = ref::stored(test::random_floats(size_t{rows} * cols, rows + cols, -8.0f, 8.0f), t);
    auto want = ref::log_softmax(x, rows, cols);
    Buffer bx = ref::upload_stored(dev, x, t, "x");
    Buffer by = ref::upload_stored(dev, x, t, "y");
    for (const auto& cfg : all_configs(dev, false))
      for (bool in_place : {false, true}) {
        INFO("[" << rows << ", " << cols << "] " << describe(cfg) << (in_place ? " in place" : "")
                 << " " << dtype_name(t));
        ref::upload_stored(dev, bx, x, t);
        ref::poison(dev, by, x.size(), t);
        const Buffer& y = in_place ? bx : by;
        Recorder rec(dev);
        ops::log_softmax(dev, rec,
                         {.dtype = t, .x = bx, .y = y, .rows = rows, .cols = cols, .config = cfg});
        rec.finish().run();
        CHECK(within(ref::download_stored(dev, y, x.size(), t), want, log_softmax_tolerance(t)));
      }
  }
}

// As for cross_entropy: on the same rounded inputs, y is the f32 kernel's rounded to f16.
std::vector<float> run_log_softmax(const std::vector<float>& x, uint32_t rows, uint32_t cols,
                                   const ops::RowKernelConfig& cfg, DType t) {
  Device& dev = test::device();
  Buffer bx = ref::upload_stored(dev, x, t, "x");
  Buffer by = ref::upload_stored(dev, x, t, "y");
  ref::poison(dev, by, x.size(), t);
  Recorder rec(dev);
  ops::log_softmax(dev, rec,
                   {.dtype = t, .x = bx, .y = by, .rows = rows, .cols = cols, .config = cfg});
  rec.finish().run();
  return ref::download_stored(dev, by, x.size(), t);
}

}  // namespace

VKF_TEST_CASE("log_softmax matches the reference for every specialization",
              "[shaders][loss][log_softmax]") {
  check_log_softmax(DType::f32);
}

VKF_TEST_CASE("log_softmax with f16 storage matches the reference for every specialization",
              "[shaders][loss][log_softmax][f16]") {
  if (test::has_storage16()) check_log_softmax(DType::f16);
}

namespace {

// log_sum_exp (the row statistic top-k of logits subtracts): every shape and specialization,
// on a poisoned output.
void check_log_sum_exp(DType t) {
  Device& dev = test::device();
  for (auto [rows, cols] : k_shapes) {
    auto x = ref::stored(test::random_floats(size_t{rows} * cols, rows + cols, -8.0f, 8.0f), t);
    auto want = ref::row_log_sum_exp(x, rows, cols);
    Buffer bx = ref::upload_stored(dev, x, t, "x");
    Buffer lse = dev.allocate(uint64_t{rows} * 4, "lse");
    for (const auto& cfg : all_configs(dev, false)) {
      INFO("[" << rows << ", " << cols << "] " << describe(cfg) << " " << dtype_name(t));
      ref::poison(dev, lse, rows, DType::f32);
      Recorder rec(dev);
      ops::log_sum_exp(
          dev, rec, {.dtype = t, .x = bx, .lse = lse, .rows = rows, .cols = cols, .config = cfg});
      rec.finish().run();
      CHECK(within(dev.download<float>(lse, rows), want, k_lse_tol));
    }
  }
}

}  // namespace

VKF_TEST_CASE("log_sum_exp matches the reference for every specialization",
              "[shaders][loss][log_softmax]") {
  check_log_sum_exp(DType::f32);
  if (test::has_storage16()) check_log_sum_exp(DType::f16);
  Device& dev = test::device();
  Buffer b = dev.allocate(4096, "b");
  Recorder rec(dev);
  REQUIRE_THROWS_WITH(
      ops::log_sum_exp(dev, rec, {.x = b, .lse = b.ref().slice(0, 16), .rows = 4, .cols = 8}),
      Catch::Contains("lse overlaps x"));
  REQUIRE_THROWS_WITH(ops::log_sum_exp(dev, rec, {.x = b, .lse = b, .rows = 4, .cols = 1024}),
                      Catch::Contains("x: needs"));
}

VKF_TEST_CASE("log_softmax with f16 storage agrees with f32 on the same inputs",
              "[shaders][loss][log_softmax][f16]") {
  if (!test::has_storage16()) return;
  for (const auto& cfg : all_configs(test::device(), false))
    for (auto [rows, cols] : {Shape{1, 300}, Shape{5, 1001}}) {
      INFO("[" << rows << ", " << cols << "] " << describe(cfg));
      auto x = ref::stored(test::random_floats(size_t{rows} * cols, rows * cols, -8.0f, 8.0f),
                           DType::f16);
      auto half = run_log_softmax(x, rows, cols, cfg, DType::f16);
      auto full = run_log_softmax(x, rows, cols, cfg, DType::f32);
      CHECK(within(half, ref::to_double(full), {6e-8, 1e-3}));
    }
}
