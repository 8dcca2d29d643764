// Label-smoothed cross-entropy, its totals and log-softmax against the double references, every
// specialization forced, in f32 and f16 storage. The f16 inputs are rounded to f16 first, so the
// references see exactly what the kernels read. Tolerances (atol + rtol; fp32 arithmetic on
// device in either dtype): loss and log p 2e-5 + 1e-5 (fp32 outputs in either dtype); gradients
// 1e-6 (times grad_scale) + 1e-4 in f32, + 1e-3 in f16 (one more rounding when stored: 2^-11
// relative, 2^-25 absolute below f16's normal range, which the atol covers); log-softmax
// 2e-5 + 1e-5 in f32, + 1e-3 in f16.
#include <cmath>
#include <cstring>
#include <random>

#include "engine/ops/loss.h"
#include "engine/ops/loss_choice.h"
#include "engine/step_scalars.h"
#include "reference/layer_norm.h"  // to_double
#include "reference/loss.h"
#include "tests/support/bare_device.h"
#include "tests/support/f16_storage.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

using Subgroup = ops::RowKernelConfig::Subgroup;
using Reads = ops::RowKernelConfig::Reads;

struct Shape {
  uint32_t rows, vocab;
};
const Shape k_shapes[] = {{1, 1}, {3, 5}, {7, 37}, {16, 1000}, {3, 37003}};

// Targets in [0, vocab); every third row (and the last) is padding, one row is out of range.
std::vector<int32_t> make_targets(uint32_t rows, uint32_t vocab, int32_t pad_id, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    t[r] = int32_t(rng() % vocab);
    if (t[r] == pad_id) t[r] = int32_t((uint32_t(pad_id) + 1) % vocab);
    if (r % 3 == 2) t[r] = pad_id;
  }
  if (rows > 4) t[rows - 1] = -1;  // outside the vocabulary: ignored too
  return t;
}

Buffer step_buffer(Device& dev, float grad_scale) {
  Buffer b = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars s;
  s.grad_scale = grad_scale;
  std::memcpy(b.mapped(), &s, sizeof s);
  return b;
}

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

struct Tolerance {
  double atol, rtol;
};
constexpr Tolerance k_loss_tol{2e-5, 1e-5};  // row_loss, row_logp: fp32 in either dtype
Tolerance grad_tolerance(DType t, float grad_scale) {
  return {1e-6 * grad_scale, t == DType::f16 ? 1e-3 : 1e-4};
}
Tolerance log_softmax_tolerance(DType t) {
  return {2e-5, t == DType::f16 ? 1e-3 : 1e-5};
}

bool within(const std::vector<float>& got, const std::vector<double>& want, Tolerance tol) {
  return test::tolerance_ratio(got, want, tol.atol, tol.rtol) <= 1.0;
}

// Where cross_entropy writes the gradient.
enum class Grad { separate, in_place, none };
const char* describe(Grad g) {
  return g == Grad::separate ? "gradient" : g == Grad::in_place ? "in place" : "no gradient";
}

// One cross_entropy problem; the logits hold values of the storage type.
struct CeProblem {
  std::vector<float> logits;
  std::vector<int32_t> targets;
  uint32_t rows = 0, vocab = 0;
  int32_t pad_id = 0;
  float eps = 0.0f, grad_scale = 1.0f;
};

struct CeOutputs {
  std::vector<float> loss, logp;
  std::vector<float> dlogits;  // empty without a gradient
  std::vector<float> logits;   // the logits buffer after the run
  ops::CrossEntropyTotals totals;
};

// Runs cross_entropy and cross_entropy_total in storage type t on freshly poisoned outputs.
CeOutputs run_cross_entropy(const CeProblem& pr, const ops::RowKernelConfig& cfg, DType t,
                            Grad grad) {
  Device& dev = test::device();
  const size_t n = pr.logits.size();
  Buffer step = step_buffer(dev, pr.grad_scale);
  Buffer bl = test::upload_stored(dev, pr.logits, t, "logits");
  Buffer bt = dev.allocate(pr.rows * 4, "targets");
  dev.upload(bt, pr.targets);
  Buffer bloss =
      test::upload_stored(dev, std::vector<float>(pr.rows, test::k_poison), DType::f32, "row loss");
  Buffer blogp =
      test::upload_stored(dev, std::vector<float>(pr.rows, test::k_poison), DType::f32, "row logp");
  Buffer bd = test::upload_stored(dev, std::vector<float>(n, test::poison(t)), t, "dlogits");
  Buffer btot =
      test::upload_stored(dev, std::vector<float>(4, test::k_poison), DType::f32, "totals");
  ops::CrossEntropyArgs a{.dtype = t,
                          .logits = bl,
                          .targets = bt,
                          .row_loss = bloss,
                          .row_logp = blogp,
                          .rows = pr.rows,
                          .vocab = pr.vocab,
                          .pad_id = pr.pad_id,
                          .label_smoothing = pr.eps,
                          .config = cfg};
  if (grad != Grad::none) {  // without a gradient the step buffer may be left out
    a.step = step;
    a.dlogits = grad == Grad::in_place ? bl.ref() : bd.ref();
  }
  Recorder rec(dev);
  ops::cross_entropy(dev, rec, a);
  ops::cross_entropy_total(dev, rec,
                           {.row_loss = bloss,
                            .row_logp = blogp,
                            .targets = bt,
                            .out = btot,
                            .rows = pr.rows,
                            .vocab = pr.vocab,
                            .pad_id = pr.pad_id,
                            .workgroup_size = cfg.workgroup_size});
  rec.finish().run();
  CeOutputs o;
  o.loss = dev.download<float>(bloss, pr.rows);
  o.logp = dev.download<float>(blogp, pr.rows);
  o.logits = test::download_stored(dev, bl, n, t);
  if (grad == Grad::separate) o.dlogits = test::download_stored(dev, bd, n, t);
  if (grad == Grad::in_place) o.dlogits = o.logits;
  o.totals = dev.download<ops::CrossEntropyTotals>(btot, 1)[0];
  return o;
}

// Gradient elements of padding rows (and rows with targets outside the vocabulary) that are not
// exactly zero.
size_t nonzero_in_ignored_rows(const CeProblem& pr, const std::vector<float>& dlogits) {
  size_t count = 0;
  for (uint32_t r = 0; r < pr.rows; ++r) {
    const int32_t t = pr.targets[r];
    if (t != pr.pad_id && t >= 0 && uint32_t(t) < pr.vocab) continue;
    for (uint32_t v = 0; v < pr.vocab; ++v) count += dlogits[size_t{r} * pr.vocab + v] != 0.0f;
  }
  return count;
}

// Every shape, label smoothing and specialization in storage type t, the gradient written
// separately; with smoothing, also in place and without a gradient.
void check_cross_entropy(DType t) {
  const int32_t pad_id = 1;
  for (auto [rows, vocab] : k_shapes) {
    CeProblem pr;
    pr.logits =
        test::stored(test::random_floats(size_t{rows} * vocab, rows * 7 + vocab, -6.0f, 6.0f), t);
    pr.pad_id = vocab > 1 ? pad_id : 7;
    pr.targets = make_targets(rows, vocab, pr.pad_id, vocab);
    pr.rows = rows;
    pr.vocab = vocab;
    pr.grad_scale = 0.37f;
    for (float eps : {0.0f, 0.1f}) {
      pr.eps = eps;
      auto want =
          ref::cross_entropy(pr.logits, pr.targets, rows, vocab, pr.pad_id, eps, pr.grad_scale);
      for (const auto& cfg : all_configs(test::device()))
        for (Grad grad : {Grad::separate, Grad::in_place, Grad::none}) {
          if (eps == 0.0f && grad != Grad::separate) continue;
          INFO("[" << rows << ", " << vocab << "] eps " << eps << " " << describe(cfg) << " "
                   << describe(grad) << " " << dtype_name(t));
          CeOutputs got = run_cross_entropy(pr, cfg, t, grad);
          CHECK(within(got.loss, want.row_loss, k_loss_tol));
          CHECK(within(got.logp, want.row_logp, k_loss_tol));
          if (grad == Grad::none) {
            CHECK(got.logits == pr.logits);  // untouched
          } else {
            CHECK(within(got.dlogits, want.dlogits, grad_tolerance(t, pr.grad_scale)));
            CHECK(nonzero_in_ignored_rows(pr, got.dlogits) == 0);
          }
          CHECK(got.totals.tokens == want.tokens);
          CHECK(std::fabs(got.totals.loss_sum - want.loss_sum) <=
                1e-4 + 1e-5 * std::fabs(want.loss_sum));
          CHECK(std::fabs(got.totals.logp_sum - want.logp_sum) <=
                1e-4 + 1e-5 * std::fabs(want.logp_sum));
          CHECK(got.totals.reserved == 0);
        }
    }
  }
}

// The f16 kernels do the f32 kernels' arithmetic on the values they load: on the same rounded
// logits, the fp32 outputs agree to fp32 rounding and the gradient is the f32 one rounded to f16
// (within one f16 ulp: 2^-10 relative, or 2^-24 below the normal range).
void check_f16_agrees_with_f32(uint32_t rows, uint32_t vocab, float eps,
                               const ops::RowKernelConfig& cfg) {
  INFO("[" << rows << ", " << vocab << "] eps " << eps << " " << describe(cfg));
  CeProblem pr;
  pr.logits = test::stored(test::random_floats(size_t{rows} * vocab, rows + vocab, -4.0f, 4.0f),
                           DType::f16);
  pr.pad_id = -100;
  pr.targets = make_targets(rows, vocab, pr.pad_id, rows * vocab);
  pr.rows = rows;
  pr.vocab = vocab;
  pr.eps = eps;
  for (Grad grad : {Grad::separate, Grad::in_place}) {
    INFO(describe(grad));
    CeOutputs half = run_cross_entropy(pr, cfg, DType::f16, grad);
    CeOutputs full = run_cross_entropy(pr, cfg, DType::f32, grad);
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
  Device& dev = test::device();
  const uint32_t rows = 9, vocab = 1001;
  const int32_t pad_id = 0;
  Buffer step = step_buffer(dev, 1.0f);
  auto logits = test::random_floats(size_t{rows} * vocab, 5, -3.0f, 3.0f);
  auto targets = make_targets(rows, vocab, pad_id, 3);
  auto want = ref::cross_entropy(logits, targets, rows, vocab, pad_id, 0.1, 1.0);
  Buffer bl = dev.allocate(logits.size() * 4, "logits"), bt = dev.allocate(rows * 4, "targets");
  Buffer bloss = dev.allocate(rows * 4, "row loss"), blogp = dev.allocate(rows * 4, "row logp");
  dev.upload(bt, targets);
  for (bool grad : {false, true}) {
    INFO((grad ? "in place" : "no gradient"));
    dev.upload(bl, logits);
    dev.upload(bloss, std::vector<float>(rows, test::k_poison));
    dev.upload(blogp, std::vector<float>(rows, test::k_poison));
    Recorder rec(dev);
    ops::CrossEntropyArgs a{.logits = bl,
                            .targets = bt,
                            .row_loss = bloss,
                            .row_logp = blogp,
                            .rows = rows,
                            .vocab = vocab,
                            .pad_id = pad_id,
                            .label_smoothing = 0.1f};
    if (grad) {
      a.step = step;
      a.dlogits = bl;
    }
    ops::cross_entropy(dev, rec, a);
    rec.finish().run();
    CHECK(test::tolerance_ratio(dev.download<float>(bloss, rows), want.row_loss, 2e-5, 1e-5) <= 1);
    CHECK(test::tolerance_ratio(dev.download<float>(blogp, rows), want.row_logp, 2e-5, 1e-5) <= 1);
    auto after = dev.download<float>(bl, logits.size());
    if (grad)
      CHECK(test::tolerance_ratio(after, want.dlogits, 1e-6, 1e-4) <= 1.0);
    else
      CHECK(after == logits);
  }
}

VKF_TEST_CASE("cross_entropy of a batch of padding only is zero: loss, tokens, gradient",
              "[shaders][loss][cross_entropy]") {
  Device& dev = test::device();
  const uint32_t rows = 6, vocab = 300;
  Buffer step = step_buffer(dev, 1.0f);
  auto logits = test::random_floats(size_t{rows} * vocab, 17);
  Buffer bl = dev.allocate(logits.size() * 4, "logits"), bt = dev.allocate(rows * 4, "t");
  Buffer bloss = dev.allocate(rows * 4, "loss"), blogp = dev.allocate(rows * 4, "logp");
  Buffer bd = dev.allocate(logits.size() * 4, "dlogits"), btot = dev.allocate(16, "totals");
  dev.upload(bl, logits);
  dev.upload(bt, std::vector<int32_t>(rows, 3));
  dev.upload(bd, std::vector<float>(logits.size(), test::k_poison));
  dev.upload(btot, std::vector<float>(4, test::k_poison));
  Recorder rec(dev);
  ops::cross_entropy(dev, rec,
                     {.logits = bl,
                      .targets = bt,
                      .step = step,
                      .row_loss = bloss,
                      .row_logp = blogp,
                      .dlogits = bd,
                      .rows = rows,
                      .vocab = vocab,
                      .pad_id = 3,
                      .label_smoothing = 0.1f});
  ops::cross_entropy_total(dev, rec,
                           {.row_loss = bloss,
                            .row_logp = blogp,
                            .targets = bt,
                            .out = btot,
                            .rows = rows,
                            .vocab = vocab,
                            .pad_id = 3});
  rec.finish().run();
  CHECK(dev.download<float>(bloss, rows) == std::vector<float>(rows, 0.0f));
  CHECK(dev.download<float>(bd, logits.size()) == std::vector<float>(logits.size(), 0.0f));
  auto tot = dev.download<ops::CrossEntropyTotals>(btot, 1)[0];
  CHECK(tot.tokens == 0);
  CHECK(tot.loss_sum == 0.0f);
}

VKF_TEST_CASE("cross_entropy gradient passes a finite-difference check",
              "[shaders][loss][cross_entropy][gradcheck]") {
  Device& dev = test::device();
  for (uint32_t vocab : {2u, 7u, 37u}) {
    for (double eps : {0.0, 0.1}) {
      INFO("vocab " << vocab << " eps " << eps);
      const uint32_t rows = 2;
      auto logits = test::random_floats(size_t{rows} * vocab, vocab, -2.0f, 2.0f);
      std::vector<int32_t> targets{int32_t(vocab - 1), 0};
      Buffer step = step_buffer(dev, 1.0f);
      Buffer bl = dev.allocate(logits.size() * 4, "logits"), bt = dev.allocate(rows * 4, "t");
      Buffer bloss = dev.allocate(rows * 4, "loss"), blogp = dev.allocate(rows * 4, "logp");
      Buffer bd = dev.allocate(logits.size() * 4, "dlogits");
      dev.upload(bl, logits);
      dev.upload(bt, targets);
      dev.upload(bd, std::vector<float>(logits.size(), test::k_poison));
      Recorder rec(dev);
      ops::cross_entropy(dev, rec,
                         {.logits = bl,
                          .targets = bt,
                          .step = step,
                          .row_loss = bloss,
                          .row_logp = blogp,
                          .dlogits = bd,
                          .rows = rows,
                          .vocab = vocab,
                          .pad_id = -100,
                          .label_smoothing = float(eps)});
      rec.finish().run();
      auto got = dev.download<float>(bd, logits.size());
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
  auto logits = test::random_floats(size_t{rows} * vocab, 11);
  std::vector<int32_t> targets{3, 0, 49, 7};
  Buffer step = step_buffer(dev, 1.0f);
  Buffer bl = dev.allocate(logits.size() * 4, "logits"), bt = dev.allocate(rows * 4, "t");
  Buffer bloss = dev.allocate(rows * 4, "loss"), blogp = dev.allocate(rows * 4, "logp");
  Buffer bd = dev.allocate(logits.size() * 4, "dlogits");
  dev.upload(bl, logits);
  dev.upload(bt, targets);
  Recorder rec(dev);
  ops::cross_entropy(dev, rec,
                     {.logits = bl,
                      .targets = bt,
                      .step = step,
                      .row_loss = bloss,
                      .row_logp = blogp,
                      .dlogits = bd,
                      .rows = rows,
                      .vocab = vocab,
                      .pad_id = 0,
                      .label_smoothing = 0.1f});
  Sequence seq = rec.finish();
  for (float scale : {1.0f, 0.25f, 1024.0f}) {
    reinterpret_cast<StepScalars*>(step.mapped())->grad_scale = scale;
    seq.run();
    auto want = ref::cross_entropy(logits, targets, rows, vocab, 0, 0.1f, scale);
    CHECK(test::tolerance_ratio(dev.download<float>(bd, logits.size()), want.dlogits, 1e-6 * scale,
                                1e-4) <= 1.0);
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
    auto x = test::stored(test::random_floats(size_t{rows} * cols, rows + cols, -8.0f, 8.0f), t);
    auto want = ref::log_softmax(x, rows, cols);
    Buffer bx = test::upload_stored(dev, x, t, "x");
    Buffer by = test::upload_stored(dev, x, t, "y");
    for (const auto& cfg : all_configs(dev, false))
      for (bool in_place : {false, true}) {
        INFO("[" << rows << ", " << cols << "] " << describe(cfg) << (in_place ? " in place" : "")
                 << " " << dtype_name(t));
        test::upload_stored(dev, bx, x, t);
        test::upload_stored(dev, by, std::vector<float>(x.size(), test::poison(t)), t);
        const Buffer& y = in_place ? bx : by;
        Recorder rec(dev);
        ops::log_softmax(dev, rec,
                         {.dtype = t, .x = bx, .y = y, .rows = rows, .cols = cols, .config = cfg});
        rec.finish().run();
        CHECK(within(test::download_stored(dev, y, x.size(), t), want, log_softmax_tolerance(t)));
      }
  }
}

// As for cross_entropy: on the same rounded inputs, y is the f32 kernel's rounded to f16.
std::vector<float> run_log_softmax(const std::vector<float>& x, uint32_t rows, uint32_t cols,
                                   const ops::RowKernelConfig& cfg, DType t) {
  Device& dev = test::device();
  Buffer bx = test::upload_stored(dev, x, t, "x");
  Buffer by = test::upload_stored(dev, std::vector<float>(x.size(), test::poison(t)), t, "y");
  Recorder rec(dev);
  ops::log_softmax(dev, rec,
                   {.dtype = t, .x = bx, .y = by, .rows = rows, .cols = cols, .config = cfg});
  rec.finish().run();
  return test::download_stored(dev, by, x.size(), t);
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
    auto x = test::stored(test::random_floats(size_t{rows} * cols, rows + cols, -8.0f, 8.0f), t);
    auto want = ref::row_log_sum_exp(x, rows, cols);
    Buffer bx = test::upload_stored(dev, x, t, "x");
    Buffer lse = dev.allocate(uint64_t{rows} * 4, "lse");
    for (const auto& cfg : all_configs(dev, false)) {
      INFO("[" << rows << ", " << cols << "] " << describe(cfg) << " " << dtype_name(t));
      dev.upload(lse, std::vector<float>(rows, test::k_poison));
      Recorder rec(dev);
      ops::log_sum_exp(
          dev, rec, {.dtype = t, .x = bx, .lse = lse, .rows = rows, .cols = cols, .config = cfg});
      rec.finish().run();
      CHECK(within(dev.download<float>(lse, rows), want, k_loss_tol));
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
      auto x = test::stored(test::random_floats(size_t{rows} * cols, rows * cols, -8.0f, 8.0f),
                            DType::f16);
      auto half = run_log_softmax(x, rows, cols, cfg, DType::f16);
      auto full = run_log_softmax(x, rows, cols, cfg, DType::f32);
      CHECK(within(half, ref::to_double(full), {6e-8, 1e-3}));
    }
}
