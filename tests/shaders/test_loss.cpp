// Label-smoothed cross-entropy, its totals and log-softmax against the double references.
// Tolerances (fp32 on device): loss and log p atol 2e-5 + rtol 1e-5; gradients atol 1e-6 + rtol
// 1e-4 (relative to grad_scale); log-softmax atol 2e-5 + rtol 1e-5.
#include <cmath>
#include <cstring>
#include <random>

#include "engine/ops/loss.h"
#include "engine/step_scalars.h"
#include "tests/reference/loss.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

using Subgroup = ops::RowKernelConfig::Subgroup;

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

std::vector<ops::RowKernelConfig> all_configs(const Device& dev) {
  std::vector<ops::RowKernelConfig> out;
  for (uint32_t wg : {32u, 64u, 256u, 1024u}) {
    out.push_back({wg, Subgroup::off});
    if (dev.info().subgroup_arithmetic) out.push_back({wg, Subgroup::on});
  }
  return out;
}

std::string describe(const ops::RowKernelConfig& c) {
  return "wg " + std::to_string(c.workgroup_size) +
         (c.subgroup == Subgroup::on ? " subgroup" : " shared");
}

}  // namespace

VKF_TEST_CASE("cross_entropy matches the reference for every specialization",
              "[shaders][loss][cross_entropy]") {
  Device& dev = test::device();
  const int32_t pad_id = 1;
  const float grad_scale = 0.37f;
  Buffer step = step_buffer(dev, grad_scale);
  for (auto [rows, vocab] : k_shapes) {
    auto logits = test::random_floats(size_t{rows} * vocab, rows * 7 + vocab, -6.0f, 6.0f);
    auto targets = make_targets(rows, vocab, vocab > 1 ? pad_id : 7, vocab);
    Buffer bl = dev.allocate(logits.size() * 4, "logits");
    Buffer bt = dev.allocate(rows * 4, "targets");
    Buffer bloss = dev.allocate(rows * 4, "row loss"), blogp = dev.allocate(rows * 4, "row logp");
    Buffer bd = dev.allocate(logits.size() * 4, "dlogits");
    Buffer btot = dev.allocate(16, "totals");
    dev.upload(bl, logits);
    dev.upload(bt, targets);
    for (float eps : {0.0f, 0.1f}) {
      auto want =
          ref::cross_entropy(logits, targets, rows, vocab, vocab > 1 ? pad_id : 7, eps, grad_scale);
      for (const auto& cfg : all_configs(dev)) {
        INFO("[" << rows << ", " << vocab << "] eps " << eps << " " << describe(cfg));
        dev.upload(bloss, std::vector<float>(rows, test::k_poison));
        dev.upload(blogp, std::vector<float>(rows, test::k_poison));
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
                            .pad_id = vocab > 1 ? pad_id : 7,
                            .label_smoothing = eps,
                            .config = cfg});
        ops::cross_entropy_total(dev, rec,
                                 {.row_loss = bloss,
                                  .row_logp = blogp,
                                  .targets = bt,
                                  .out = btot,
                                  .rows = rows,
                                  .vocab = vocab,
                                  .pad_id = vocab > 1 ? pad_id : 7,
                                  .workgroup_size = cfg.workgroup_size});
        rec.finish().run();
        CHECK(test::tolerance_ratio(dev.download<float>(bloss, rows), want.row_loss, 2e-5, 1e-5) <=
              1.0);
        CHECK(test::tolerance_ratio(dev.download<float>(blogp, rows), want.row_logp, 2e-5, 1e-5) <=
              1.0);
        CHECK(test::tolerance_ratio(dev.download<float>(bd, logits.size()), want.dlogits,
                                    1e-6 * grad_scale, 1e-4) <= 1.0);
        auto tot = dev.download<ops::CrossEntropyTotals>(btot, 1)[0];
        CHECK(tot.tokens == want.tokens);
        CHECK(std::fabs(tot.loss_sum - want.loss_sum) <= 1e-4 + 1e-5 * std::fabs(want.loss_sum));
        CHECK(std::fabs(tot.logp_sum - want.logp_sum) <= 1e-4 + 1e-5 * std::fabs(want.logp_sum));
        CHECK(tot.reserved == 0);
      }
    }
  }
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
}

VKF_TEST_CASE("log_softmax matches the reference for every specialization",
              "[shaders][loss][log_softmax]") {
  Device& dev = test::device();
  for (auto [rows, cols] : k_shapes) {
    auto x = test::random_floats(size_t{rows} * cols, rows + cols, -8.0f, 8.0f);
    auto want = ref::log_softmax(x, rows, cols);
    Buffer bx = dev.allocate(x.size() * 4, "x"), by = dev.allocate(x.size() * 4, "y");
    for (const auto& cfg : all_configs(dev)) {
      INFO("[" << rows << ", " << cols << "] " << describe(cfg));
      dev.upload(bx, x);
      dev.upload(by, std::vector<float>(x.size(), test::k_poison));
      Recorder rec(dev);
      ops::log_softmax(dev, rec, {.x = bx, .y = by, .rows = rows, .cols = cols, .config = cfg});
      rec.finish().run();
      CHECK(test::tolerance_ratio(dev.download<float>(by, x.size()), want, 2e-5, 1e-5) <= 1.0);
    }
    // In place.
    Recorder rec(dev);
    ops::log_softmax(dev, rec, {.x = bx, .y = bx, .rows = rows, .cols = cols});
    rec.finish().run();
    CHECK(test::tolerance_ratio(dev.download<float>(bx, x.size()), want, 2e-5, 1e-5) <= 1.0);
  }
}
