// The tuning of the op families after matmul: attention (path and tiles per kernel), LayerNorm
// and cross-entropy (reduction and workgroup size). Which configuration each op runs and why
// (engine/ops/*_choice.h: forced, tuned or the default), that the ops run the device's tuning
// bit for bit as the same configuration forced, the tuners (tune/) driven by a fake timer
// and their correctness guards, the model-wide budget, and the tuning file's new entries.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/ops/attention_choice.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/topk_choice.h"
#include "engine/step_scalars.h"
#include "engine/tuning.h"
#include "engine/tuning_file.h"
#include "tests/support/fake_devices.h"
#include "tests/support/small_corpus.h"
#include "tests/support/vk_test.h"
#include "tune/families.h"
#include "tune/model_tuner.h"

using namespace vkf;

namespace {

using Unroll = ops::AttentionTiles::Unroll;

DeviceInfo cpu_info(uint32_t subgroup) {
  return test::fake_cpu_info(subgroup);
}

// Times nothing: a candidate's seconds come from its place in `order` (by description), so the
// assertions name the winner with no timing in them.
class FakeTimer : public tune::Timer {
 public:
  FakeTimer(std::vector<std::string> order, std::map<size_t, double> times)
      : order_(std::move(order)), times_(std::move(times)) {}
  RecorderOptions recorder_options(const Device&) const override { return {}; }
  double seconds(Sequence&, const std::string& c, const std::string&, double) override {
    ++calls;
    for (size_t i = 0; i < order_.size(); ++i)
      if (order_[i] == c) return times_.count(i) ? times_.at(i) : 1.0;
    FAIL("the tuner timed a configuration outside its candidates: " << c);
    return 0;
  }
  int calls = 0;

 private:
  std::vector<std::string> order_;
  std::map<size_t, double> times_;
};

template <class C>
std::vector<std::string> described(const std::vector<C>& cands) {
  std::vector<std::string> out;
  for (const C& c : cands) out.push_back(ops::describe(c));
  return out;
}

tune::TunerOptions short_search(size_t candidates) {
  tune::TunerOptions o;
  o.max_candidates = candidates;
  o.budget_seconds = 600;
  return o;
}

auto far_deadline() {
  return std::chrono::steady_clock::now() + std::chrono::minutes(10);
}

// The tiled path's default tiles: a configuration a CPU device does not choose untuned (and a
// GPU's own default there).
ops::AttentionTiles tiled_default(const DeviceInfo& info, ops::AttentionKernel k, uint32_t d) {
  ops::AttentionTiles t = ops::attention_default_tiles(info, k, d, d);
  t.path = ops::AttentionPath::tiled;
  return t;
}

}  // namespace

TEST_CASE("attention, LayerNorm and cross-entropy choices: tuned or the default, and why",
          "[shaders][tune]") {
  const DeviceInfo cpu = cpu_info(8);
  const ops::AttentionProblem fwd{DType::f32, ops::AttentionKernel::forward, 64, 64, 30, 30, true};
  CHECK(ops::attention_shape_class(fwd) == "f32/fwd/d64/causal/q64/k64");
  CHECK(ops::attention_shape_class({DType::f16, ops::AttentionKernel::backward_kv, 64, 32, 1, 300,
                                    false}) == "f16/bkv/d64x32/full/q16/k1k");
  CHECK(ops::layer_norm_shape_class({DType::f32, true, 4096, 500}) == "f32/bwd/d512");
  CHECK(ops::layer_norm_shape_class({DType::f16, false, 1, 10000}) == "f16/fwd/dbig");
  CHECK(ops::cross_entropy_shape_class({DType::f32, 100, 8000}) == "f32/v16k");

  // Defaults: the rows path on a CPU device; a subgroup per row; 256 invocations and subgroups.
  const ops::AttentionChoice a = ops::choose_attention(cpu, nullptr, fwd);
  CHECK(a.source == ops::ConfigSource::table);
  CHECK(a.tiles.path == ops::AttentionPath::rows);
  CHECK_THAT(a.why, Catch::Contains("rows path"));
  const ops::LayerNormChoice l = ops::choose_layer_norm(cpu, nullptr, {DType::f32, false, 64, 512});
  CHECK(l.config == ops::LayerNormConfig{64, ops::RowReduce::subgroup_rows,
                                         ops::RowKernelConfig::Reads::storage});
  const ops::CrossEntropyChoice c = ops::choose_cross_entropy(cpu, nullptr, {DType::f32, 9, 8000});
  CHECK(c.config.workgroup_size == 256);
  CHECK(c.config.subgroup == ops::RowKernelConfig::Subgroup::on);
  CHECK(c.config.reads == ops::RowKernelConfig::Reads::storage);

  Tuning tuning;
  tuning.origin = "test";
  tuning.of<ops::AttentionFamily>()[ops::attention_shape_class(fwd)] =
      tiled_default(cpu, ops::AttentionKernel::forward, 64);
  tuning.of<ops::LayerNormFamily>()["f32/fwd/d512"] = {128, ops::RowReduce::shared};
  tuning.of<ops::CrossEntropyFamily>()["f32/v16k"] = {128, ops::RowKernelConfig::Subgroup::off};
  const ops::AttentionChoice ta = ops::choose_attention(cpu, &tuning, fwd);
  CHECK(ta.source == ops::ConfigSource::tuned);
  CHECK(ta.tiles.path == ops::AttentionPath::tiled);
  CHECK_THAT(ta.why, Catch::Contains("f32/fwd/d64/causal/q64/k64") && Catch::Contains("test"));
  // A rows-path entry comes with the default's tiles, for a caller that switches the path.
  const ops::AttentionProblem bq{DType::f32, ops::AttentionKernel::backward_q, 64, 64, 30, 30,
                                 false};
  tuning.of<ops::AttentionFamily>()[ops::attention_shape_class(bq)] = {
      0, 0, 0, ops::AttentionPath::rows, 3, Unroll::rolled};
  const ops::AttentionChoice tr = ops::choose_attention(cpu, &tuning, bq);
  CHECK(tr.source == ops::ConfigSource::tuned);
  CHECK(tr.tiles.rows == 3);
  CHECK(tr.tiles.workgroup == ops::attention_default_tiles(cpu, bq.kernel, 64, 64).workgroup);
  CHECK(tr.tiles.block_q == ops::attention_default_tiles(cpu, bq.kernel, 64, 64).block_q);
  // Another class (a longer sequence, no mask, the backward) keeps the default.
  CHECK(ops::choose_attention(cpu, &tuning,
                              {DType::f32, ops::AttentionKernel::forward, 64, 64, 300, 300, true})
            .source == ops::ConfigSource::table);
  CHECK(ops::choose_attention(cpu, &tuning,
                              {DType::f32, ops::AttentionKernel::backward_q, 64, 64, 30, 30, true})
            .source == ops::ConfigSource::table);
  const ops::LayerNormChoice tl = ops::choose_layer_norm(cpu, &tuning, {DType::f32, false, 7, 400});
  CHECK(tl.source == ops::ConfigSource::tuned);
  // An entry from before the reads were tuned reads the default's way (storage buffers).
  CHECK(tl.config ==
        ops::LayerNormConfig{128, ops::RowReduce::shared, ops::RowKernelConfig::Reads::storage});
  tuning.of<ops::LayerNormFamily>()["f32/fwd/d512"].reads = ops::RowKernelConfig::Reads::texel;
  CHECK(ops::choose_layer_norm(cpu, &tuning, {DType::f32, false, 7, 400}).config.reads ==
        ops::RowKernelConfig::Reads::texel);
  CHECK(ops::choose_layer_norm(cpu, &tuning, {DType::f32, true, 7, 400}).source ==
        ops::ConfigSource::table);
  const ops::CrossEntropyChoice tc = ops::choose_cross_entropy(cpu, &tuning, {DType::f32, 3, 9000});
  CHECK(tc.source == ops::ConfigSource::tuned);
  CHECK(tc.config.workgroup_size == 128);
  // An entry from before the read path was tuned reads the default's way.
  CHECK(tc.config.reads == ops::RowKernelConfig::Reads::storage);

  // Entries this device cannot run are passed over, saying why.
  DeviceInfo small = cpu;
  small.shared_memory_bytes = 1024;
  small.subgroup_arithmetic = false;
  small.max_workgroup_invocations = 64;
  CHECK_THAT(ops::choose_attention(small, &tuning, fwd).why,
             Catch::Contains("passed over") && Catch::Contains("not valid here"));
  const ops::LayerNormChoice over =
      ops::choose_layer_norm(small, &tuning, {DType::f32, false, 1, 512});
  CHECK(over.source == ops::ConfigSource::table);
  CHECK_THAT(over.why, Catch::Contains("passed over") && Catch::Contains("power of two up to 64"));
  CHECK_THAT(ops::choose_cross_entropy(small, &tuning, {DType::f32, 1, 9000}).why,
             Catch::Contains("passed over") && Catch::Contains("exceeds"));
}

VKF_TEST_CASE("attention, LayerNorm and cross-entropy run the device's tuning, forced still wins",
              "[shaders][tune]") {
  auto dev = test::new_device();
  const DeviceInfo& info = dev->info();
  if (dev->options().ops.attention_rows)
    VKF_SKIP("VKF_ATTENTION_PATH forces the attention path this test varies");
  if (!info.subgroup_arithmetic) VKF_SKIP("the configurations varied need subgroup arithmetic");

  // Attention: each kernel tuned to the path its default is not, with that path's defaults.
  const uint32_t B = 2, H = 2, L = 21, D = 16;
  const size_t n = size_t(B) * H * L * D;
  Buffer q = dev->allocate(n * 4, "q"), k = dev->allocate(n * 4, "k"),
         v = dev->allocate(n * 4, "v"), o = dev->allocate(n * 4, "o"),
         d_o = dev->allocate(n * 4, "d_o"), dq = dev->allocate(n * 4, "dq"),
         dk = dev->allocate(n * 4, "dk"), dv = dev->allocate(n * 4, "dv"),
         lse = dev->allocate(B * H * L * 4, "lse"), delta = dev->allocate(B * H * L * 4, "delta");
  dev->upload(q, test::random_floats(n, 1));
  dev->upload(k, test::random_floats(n, 2));
  dev->upload(v, test::random_floats(n, 3));
  dev->upload(d_o, test::random_floats(n, 4));
  ops::AttentionBackwardArgs g;
  g.fwd.batch = B, g.fwd.heads = H, g.fwd.len_q = g.fwd.len_k = L, g.fwd.d_k = g.fwd.d_v = D;
  g.fwd.q = q, g.fwd.k = k, g.fwd.v = v, g.fwd.o = o, g.fwd.lse = lse, g.fwd.causal = true;
  g.d_o = d_o, g.d_q = dq, g.d_k = dk, g.d_v = dv, g.delta = delta;
  auto other_path = [&](ops::AttentionKernel kernel) {
    const ops::AttentionProblem p{DType::f32, kernel, D, D, L, L, true};
    ops::AttentionTiles t = tune::attention_default(info, p);
    if (t.path == ops::AttentionPath::rows) return tiled_default(info, kernel, D);
    t.path = ops::AttentionPath::rows;
    t.rows = 1;
    t.unroll = Unroll::rolled;
    return t;
  };
  auto run_attention = [&](const ops::AttentionBackwardArgs& x) {
    Recorder rec(*dev);
    ops::attention_forward(*dev, rec, x.fwd);
    ops::attention_backward(*dev, rec, x);
    Sequence seq = rec.finish();
    seq.run();
    std::vector<uint32_t> bits = dev->download<uint32_t>(o, n);
    for (const Buffer* b : {&dq, &dk, &dv}) {
      const std::vector<uint32_t> more = dev->download<uint32_t>(*b, n);
      bits.insert(bits.end(), more.begin(), more.end());
    }
    return std::make_pair(seq.kernel_names(), bits);
  };
  const auto untuned = run_attention(g);
  const bool rows_ok =
      ops::attention_tiles_misfit(info, ops::AttentionKernel::forward,
                                  {0, 0, 0, ops::AttentionPath::rows, 2, Unroll::rolled}, D, D)
          .empty();

  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  ops::AttentionBackwardArgs forced = g;
  for (auto kernel : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                      ops::AttentionKernel::backward_q})
    tuning->of<ops::AttentionFamily>()[ops::attention_shape_class(
        {DType::f32, kernel, D, D, L, L, true})] = other_path(kernel);
  forced.fwd.tiles = other_path(ops::AttentionKernel::forward);
  forced.tiles_kv = other_path(ops::AttentionKernel::backward_kv);
  forced.tiles_q = other_path(ops::AttentionKernel::backward_q);
  dev->set_tuning(tuning);
  const auto tuned = run_attention(g);
  CHECK(tuned.first != untuned.first);
  const bool untuned_rows = untuned.first.front().find("rows") != std::string::npos;
  for (const std::string& name : tuned.first)
    if (name.find("delta") == std::string::npos)
      CHECK((name.find("rows") != std::string::npos) == !untuned_rows);
  // A configuration forced by the caller wins over the tuning.
  ops::AttentionBackwardArgs own = g;
  own.fwd.tiles.path = untuned_rows ? ops::AttentionPath::rows : ops::AttentionPath::tiled;
  CHECK(run_attention(own).first.front() == untuned.first.front());
  dev->set_tuning(nullptr);
  // Bit for bit what the same configurations give when forced.
  CHECK(run_attention(forced) == tuned);

  // A tuned rows-path entry on a device told to take the tiled path (OpOverrides): the tiled
  // kernels, with the default tiles.
  if (rows_ok) {
    DeviceOptions tiled_opts;
    tiled_opts.ops.attention_rows = false;
    auto tiled_dev = test::new_device(tiled_opts);
    auto rows_tuning = std::make_shared<Tuning>();
    rows_tuning->origin = "test";
    rows_tuning->of<ops::AttentionFamily>()[ops::attention_shape_class(
        {DType::f32, ops::AttentionKernel::forward, D, D, L, L, true})] = {
        0, 0, 0, ops::AttentionPath::rows, 2, Unroll::rolled};
    tiled_dev->set_tuning(rows_tuning);
    Buffer tq = tiled_dev->allocate(n * 4, "q"), tk = tiled_dev->allocate(n * 4, "k"),
           tv = tiled_dev->allocate(n * 4, "v"), to = tiled_dev->allocate(n * 4, "o"),
           tl = tiled_dev->allocate(B * H * L * 4, "lse");
    ops::AttentionArgs ta = g.fwd;
    ta.q = tq, ta.k = tk, ta.v = tv, ta.o = to, ta.lse = tl;
    Recorder rec(*tiled_dev);
    ops::attention_forward(*tiled_dev, rec, ta);
    CHECK(rec.finish().kernel_names() == std::vector<std::string>{"attention_forward"});
  }

  // LayerNorm: a workgroup per row through shared memory, where the default is a subgroup per
  // row (or the reverse).
  const uint32_t rows = 19, d = 40;
  Buffer x = dev->allocate(rows * d * 4, "x"), y = dev->allocate(rows * d * 4, "y"),
         gamma = dev->allocate(d * 4, "gamma"), beta = dev->allocate(d * 4, "beta"),
         mean = dev->allocate(rows * 4, "mean"), rstd = dev->allocate(rows * 4, "rstd");
  dev->upload(x, test::random_floats(rows * d, 5));
  dev->upload(gamma, test::random_floats(d, 6));
  dev->upload(beta, test::random_floats(d, 7));
  ops::LayerNormForwardArgs f;
  f.x = x, f.gamma = gamma, f.beta = beta, f.y = y, f.mean = mean, f.rstd = rstd;
  f.rows = rows, f.d = d;
  auto run_norm = [&](const ops::LayerNormForwardArgs& a) {
    Recorder rec(*dev);
    ops::layer_norm_forward(*dev, rec, a);
    Sequence seq = rec.finish();
    seq.run();
    return std::make_pair(seq.kernel_names(), dev->download<uint32_t>(y, rows * d));
  };
  const ops::LayerNormConfig def = ops::layer_norm_default_config(info, d);
  // The other reduction, reading through texel views.
  const ops::LayerNormConfig other =
      def.reduce == ops::RowReduce::shared
          ? ops::LayerNormConfig{64, ops::RowReduce::subgroup_rows,
                                 ops::RowKernelConfig::Reads::texel}
          : ops::LayerNormConfig{32, ops::RowReduce::shared, ops::RowKernelConfig::Reads::texel};
  const auto norm_untuned = run_norm(f);
  tuning->of<ops::LayerNormFamily>()[ops::layer_norm_shape_class({DType::f32, false, rows, d})] =
      other;
  dev->set_tuning(tuning);
  const auto norm_tuned = run_norm(f);
  CHECK(norm_tuned.first != norm_untuned.first);
  ops::LayerNormForwardArgs norm_own = f;
  norm_own.reduce = def.reduce;
  CHECK(run_norm(norm_own).first == norm_untuned.first);
  dev->set_tuning(nullptr);
  ops::LayerNormForwardArgs norm_forced = f;
  norm_forced.reduce = other.reduce, norm_forced.workgroup_size = other.workgroup_size;
  norm_forced.reads = other.reads;
  CHECK(run_norm(norm_forced) == norm_tuned);

  // Cross-entropy: shared-memory reductions where the default takes subgroups.
  const uint32_t vocab = 301;
  Buffer logits = dev->allocate(rows * vocab * 4, "logits"), targets = dev->allocate(rows * 4, "t"),
         loss = dev->allocate(rows * 4, "loss"), logp = dev->allocate(rows * 4, "logp"),
         dlogits = dev->allocate(rows * vocab * 4, "dlogits"),
         step = dev->allocate(sizeof(StepScalars), "step", MemoryKind::host);
  StepScalars st;
  std::memcpy(step.mapped(), &st, sizeof st);
  dev->upload(logits, test::random_floats(rows * vocab, 8, -3, 3));
  std::vector<int32_t> tgt(rows);
  for (uint32_t r = 0; r < rows; ++r) tgt[r] = int32_t(r * 13 % vocab);
  dev->upload(targets, tgt);
  ops::CrossEntropyArgs ce;
  ce.logits = logits, ce.targets = targets, ce.step = step, ce.row_loss = loss;
  ce.row_logp = logp, ce.dlogits = dlogits, ce.rows = rows, ce.vocab = vocab;
  ce.label_smoothing = 0.1f;
  auto run_ce = [&](const ops::CrossEntropyArgs& a) {
    Recorder rec(*dev);
    ops::cross_entropy(*dev, rec, a);
    Sequence seq = rec.finish();
    seq.run();
    std::vector<uint32_t> bits = dev->download<uint32_t>(dlogits, rows * vocab);
    const std::vector<uint32_t> l = dev->download<uint32_t>(loss, rows);
    bits.insert(bits.end(), l.begin(), l.end());
    return std::make_pair(seq.kernel_names(), bits);
  };
  const ops::RowKernelConfig ce_other{128, ops::RowKernelConfig::Subgroup::off};
  const auto ce_untuned = run_ce(ce);
  tuning->of<ops::CrossEntropyFamily>()[ops::cross_entropy_shape_class({DType::f32, rows, vocab})] =
      ce_other;
  dev->set_tuning(tuning);
  const auto ce_tuned = run_ce(ce);
  CHECK(ce_tuned.first == std::vector<std::string>{"cross_entropy"});
  CHECK(ce_untuned.first == std::vector<std::string>{"cross_entropy_sg"});
  ops::CrossEntropyArgs ce_own = ce;
  ce_own.config.subgroup = ops::RowKernelConfig::Subgroup::on;
  CHECK(run_ce(ce_own).first == ce_untuned.first);
  dev->set_tuning(nullptr);
  ops::CrossEntropyArgs ce_forced = ce;
  ce_forced.config = ce_other;
  CHECK(run_ce(ce_forced) == ce_tuned);
}

VKF_TEST_CASE("family tuners: the fastest correct candidate wins, by a fake timer",
              "[shaders][tune]") {
  auto dev = test::new_device();
  const DeviceInfo& info = dev->info();

  const tune::AttentionWork w{
      {DType::f32, ops::AttentionKernel::backward_q, 16, 16, 40, 40, true}, 2, 2};
  const auto att = tune::attention_candidates(info, w.problem);
  REQUIRE(att.size() >= 5);
  CHECK(ops::same_kernel(att.front(), tune::attention_default(info, w.problem)));
  FakeTimer at(described(att), {{0, 1.0}, {2, 0.6}, {3, 0.4}, {4, 0.5}});
  const TunedAttention ta = tune::tune_attention(*dev, w, at, short_search(5), far_deadline());
  CHECK(ops::same_kernel(ta.config, att[3]));
  CHECK(ta.default_name == ops::describe(att.front()));
  CHECK(ta.default_seconds == 1.0);
  CHECK(ta.seconds == 0.4);
  CHECK(ta.tried == 5);
  CHECK(ta.rejected.empty());
  CHECK(ta.shape_class == "f32/bq/d16/causal/q64/k64");

  const ops::LayerNormProblem lp{DType::f32, true, 100, 96};
  const auto ln = tune::layer_norm_candidates(info, lp);
  REQUIRE(ln.size() >= 4);
  CHECK(ln.front() == ops::layer_norm_default_config(info, lp.d));
  // The first alternative is the default's other read path, the same kernel otherwise.
  CHECK(ln[1].reads == ops::RowKernelConfig::Reads::texel);
  CHECK(ln[1].reduce == ln[0].reduce);
  CHECK(ln[1].workgroup_size == ln[0].workgroup_size);
  FakeTimer lt(described(ln), {{0, 1.0}, {1, 0.3}, {3, 0.2}});
  const TunedLayerNorm tl = tune::tune_layer_norm(*dev, lp, lt, short_search(4), far_deadline());
  CHECK(tl.config == ln[3]);
  CHECK(tl.seconds == 0.2);
  // A deadline already past: the default alone is timed (the speed-up is against it), the rest
  // are counted as untried.
  FakeTimer late(described(ln), {});
  const TunedLayerNorm tl_late =
      tune::tune_layer_norm(*dev, lp, late, short_search(0), std::chrono::steady_clock::now());
  CHECK(late.calls == 1);
  CHECK(tl_late.tried == 1);
  CHECK(tl_late.untried == ln.size() - 1);
  CHECK(tl_late.config == ln.front());

  const ops::CrossEntropyProblem cp{DType::f32, 50, 500};
  const auto ce = tune::cross_entropy_candidates(info, cp);
  REQUIRE(ce.size() >= 4);
  CHECK(ops::same_kernel(ce.front(), ops::row_kernel_default_config(info)));
  // The first alternative is the default's other read path, the same kernel otherwise.
  CHECK(ce[1].reads != ce[0].reads);
  CHECK(ce[1].workgroup_size == ce[0].workgroup_size);
  CHECK(ce[1].subgroup == ce[0].subgroup);
  // All slower than the default: the default stays.
  FakeTimer ct(described(ce), {{0, 0.1}});
  const TunedCrossEntropy tc =
      tune::tune_cross_entropy(*dev, cp, ct, short_search(4), far_deadline());
  CHECK(ops::same_kernel(tc.config, ce.front()));
  CHECK(ct.calls == 4);
}

VKF_TEST_CASE("family tuners: a candidate made wrong on purpose is rejected, saying why",
              "[shaders][tune]") {
  auto dev = test::new_device();
  const DeviceInfo& info = dev->info();
  auto options = short_search(4);

  // Attention: the forward's and each backward kernel's guard.
  for (auto kernel : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                      ops::AttentionKernel::backward_q}) {
    const tune::AttentionWork w{{DType::f32, kernel, 8, 8, 24, 30, false}, 1, 2};
    const auto cands = tune::attention_candidates(info, w.problem);
    REQUIRE(cands.size() >= 4);
    const std::string wrong = ops::describe(cands[2]);
    options.sabotage = [&](const std::string& c) { return c == wrong; };
    CHECK(tune::check_attention(*dev, cands[2], w.problem).empty());
    CHECK_THAT(tune::check_attention(*dev, cands[2], w.problem, options.sabotage),
               Catch::Contains("wrong at element"));
    FakeTimer timer(described(cands), {{0, 1.0}, {2, 0.1}, {3, 0.5}});
    const TunedAttention t = tune::tune_attention(*dev, w, timer, options, far_deadline());
    CHECK(ops::same_kernel(t.config, cands[3]));
    REQUIRE(t.rejected.size() == 1);
    CHECK(t.rejected[0].first == wrong);
  }

  const ops::LayerNormProblem lp{DType::f32, false, 30, 33};
  const auto ln = tune::layer_norm_candidates(info, lp);
  REQUIRE(ln.size() >= 4);
  const std::string ln_wrong = ops::describe(ln[1]);
  options.sabotage = [&](const std::string& c) { return c == ln_wrong; };
  CHECK(tune::check_layer_norm(*dev, ln[1], lp).empty());
  FakeTimer lt(described(ln), {{0, 1.0}, {1, 0.1}, {2, 0.5}});
  const TunedLayerNorm tl = tune::tune_layer_norm(*dev, lp, lt, options, far_deadline());
  CHECK(tl.config == ln[2]);
  REQUIRE(tl.rejected.size() == 1);
  CHECK_THAT(tl.rejected[0].second, Catch::Contains("y wrong at element 0"));

  const ops::CrossEntropyProblem cp{DType::f32, 30, 1000};
  const auto ce = tune::cross_entropy_candidates(info, cp);
  REQUIRE(ce.size() >= 4);
  const std::string ce_wrong = ops::describe(ce[0]);  // even the default
  options.sabotage = [&](const std::string& c) { return c == ce_wrong; };
  CHECK(tune::check_cross_entropy(*dev, ce[0], cp).empty());
  FakeTimer ct(described(ce), {{0, 0.1}, {1, 0.5}, {2, 0.4}});
  const TunedCrossEntropy tc = tune::tune_cross_entropy(*dev, cp, ct, options, far_deadline());
  // The default is wrong: the fastest correct candidate replaces it.
  CHECK(ops::same_kernel(tc.config, ce[2]));
  REQUIRE(tc.rejected.size() == 1);
  CHECK_THAT(tc.rejected[0].second, Catch::Contains("dlogits wrong at element 0"));
}

VKF_TEST_CASE("model tuner: every family within the budget, and a spent budget starts nothing",
              "[shaders][tune]") {
  auto dev = test::new_device();
  tune::TuneShapes shapes;
  shapes.of<ops::MatmulFamily>() = {{DType::f32, false, true, 40, 24, 16},
                                    {DType::f32, false, true, 41, 25, 15}};
  shapes.of<ops::AttentionFamily>() = {
      {{DType::f32, ops::AttentionKernel::forward, 8, 8, 20, 20, true}, 1, 2}};
  shapes.of<ops::LayerNormFamily>() = {{DType::f32, false, 40, 24}, {DType::f32, true, 40, 24}};
  shapes.of<ops::CrossEntropyFamily>() = {{DType::f32, 40, 100}};
  shapes.of<ops::TopKFamily>() = {{DType::f32, 8, 300, 10}};
  shapes.of<ops::AdamFamily>() = {{5000}};
  std::vector<std::string> names;
  for (auto c : tune::matmul_candidates(dev->info(), shapes.of<ops::MatmulFamily>()[0]))
    names.push_back(c.describe());
  for (auto s : described(
           tune::attention_candidates(dev->info(), shapes.of<ops::AttentionFamily>()[0].problem)))
    names.push_back(s);
  for (auto s :
       described(tune::layer_norm_candidates(dev->info(), shapes.of<ops::LayerNormFamily>()[0])))
    names.push_back(s);
  for (auto s : described(
           tune::cross_entropy_candidates(dev->info(), shapes.of<ops::CrossEntropyFamily>()[0])))
    names.push_back(s);
  for (auto s : described(tune::topk_candidates(dev->info(), shapes.of<ops::TopKFamily>()[0])))
    names.push_back(s);
  for (auto s : described(tune::adam_candidates(
           dev->info(), std::min(shapes.of<ops::AdamFamily>()[0].n, 16u << 20))))
    names.push_back(s);
  FakeTimer timer(names, {});
  const tune::TuneReport all = tune::tune_model(*dev, shapes, timer, short_search(2));
  CHECK(all.file.of<ops::MatmulFamily>().size() == 1);  // one shape class
  CHECK(all.file.of<ops::AttentionFamily>().size() == 1);
  CHECK(all.file.of<ops::LayerNormFamily>().size() == 2);
  CHECK(all.file.of<ops::CrossEntropyFamily>().size() == 1);
  CHECK(all.file.of<ops::TopKFamily>().size() == 1);
  CHECK(all.file.of<ops::AdamFamily>().size() == 1);
  CHECK(all.skipped.empty());

  // Nothing left of the budget: no class is searched, each is named.
  tune::TunerOptions none = short_search(2);
  none.budget_seconds = 1e-12;
  FakeTimer idle(names, {});
  const tune::TuneReport spent = tune::tune_model(*dev, shapes, idle, none);
  CHECK(idle.calls == 0);
  CHECK(spent.file.of<ops::MatmulFamily>().empty());
  CHECK(spent.skipped.size() == 7);
  CHECK_THAT(spent.skipped.front(), Catch::Contains("matmul f32/abt/m128/n128/k16"));
  CHECK_THAT(spent.skipped.back(), Catch::Contains("adam f32/n64k"));
}

TEST_CASE("Adam's candidates: the device type's prior first, then its nearest neighbours",
          "[shaders][tune][adam]") {
  using Reads = ops::AdamConfig::Reads;
  DeviceInfo cpu = cpu_info(16);
  DeviceInfo gpu = cpu_info(32);
  gpu.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  gpu.max_texel_buffer_elements = cpu.max_texel_buffer_elements = 1u << 27;
  const auto on_cpu = tune::adam_candidates(cpu, 1u << 20);
  const auto on_gpu = tune::adam_candidates(gpu, 1u << 20);
  REQUIRE(on_cpu.size() == 6 * 4 * 2);  // workgroup sizes x elements x reads
  CHECK(on_cpu[0] == ops::AdamConfig{256, 4, Reads::texel});
  CHECK(on_cpu[1] == ops::AdamConfig{256, 4, Reads::storage});
  CHECK(on_gpu[0] == ops::AdamConfig{256, 4, Reads::storage});
  CHECK(on_gpu[1] == ops::AdamConfig{256, 4, Reads::texel});
  for (const auto& c : on_cpu) CHECK(ops::adam_config_misfit(cpu, c).empty());
  // Where a view of the timed parameters does not fit, no texel candidate.
  const auto too_many = tune::adam_candidates(cpu, (1u << 27) + 1);
  CHECK(too_many.size() == 6 * 4);
  CHECK(too_many[0] == ops::AdamConfig{256, 4, Reads::storage});
  for (const auto& c : too_many) CHECK(c.reads == Reads::storage);
  DeviceInfo narrow = gpu;
  narrow.max_workgroup_invocations = narrow.max_workgroup_size[0] = 128;
  const auto on_narrow = tune::adam_candidates(narrow, 1000);
  CHECK(on_narrow.size() == 3 * 4 * 2);
  CHECK(on_narrow[0] == ops::AdamConfig{128, 4, Reads::storage});
  CHECK_THAT(ops::adam_config_misfit(narrow, {256, 1, Reads::storage}), Catch::Contains("exceeds"));
  CHECK_THAT(ops::adam_config_misfit(gpu, {256, 3, Reads::storage}),
             Catch::Contains("not 1, 2, 4 or 8"));
}

VKF_TEST_CASE("Adam tuner: the fastest correct configuration wins, Adam then runs it",
              "[shaders][tune][adam]") {
  CHECK(ops::adam_shape_class({60'000'000}) == "f32/nbig");
  CHECK(ops::adam_shape_class({7'500'000}) == "f32/n16m");
  auto dev = test::new_device();
  const ops::AdamProblem p{3000};
  const auto cands = tune::adam_candidates(dev->info(), p.n);
  REQUIRE(cands.size() >= 4);
  CHECK(cands[0] == ops::adam_default_config(dev->info()));
  const std::vector<std::string> names = described(cands);
  // Every configuration of the search space against the double reference.
  for (const auto& c : cands) {
    INFO(ops::describe(c));
    CHECK(tune::check_adam(*dev, c).empty());
  }
  FakeTimer timer(names, {{0, 1.0}, {1, 0.5}, {2, 0.3}, {3, 0.6}});
  const TunedAdam t = tune::tune_adam(*dev, p, timer, short_search(4), far_deadline());
  CHECK(t.config == cands[2]);
  CHECK(t.default_name == names[0]);

  // A configuration made wrong on purpose is rejected, saying why.
  auto options = short_search(4);
  options.sabotage = [&](const std::string& c) { return c == names[2]; };
  CHECK_THAT(tune::check_adam(*dev, cands[2], options.sabotage), Catch::Contains("w wrong at"));
  FakeTimer again(names, {{0, 1.0}, {1, 0.5}, {2, 0.3}, {3, 0.6}});
  const TunedAdam r = tune::tune_adam(*dev, p, again, options, far_deadline());
  CHECK(r.config == cands[1]);
  REQUIRE(r.rejected.size() == 1);
  CHECK(r.rejected[0].first == names[2]);

  // Through the tuning file, Adam with no configuration forced runs the tuned one.
  const std::filesystem::path dir = test::temp_dir("tuning_file_adam");
  TuningFile f;
  f.key = TuningKey::of(dev->info());
  f.of<ops::AdamFamily>().push_back(r);
  const std::string path = (dir / "t.tuning.json").string();
  write_tuning_file(path, f);
  const TuningFile back = read_tuning_file(path);
  REQUIRE(back.of<ops::AdamFamily>().size() == 1);
  CHECK(back.of<ops::AdamFamily>()[0].config == r.config);
  CHECK(ops::choose_adam_config(*dev, p) == cands[0]);
  dev->set_tuning(make_tuning(back, path));
  std::string why;
  CHECK(ops::choose_adam_config(*dev, p, &why) == r.config);
  CHECK_THAT(why, Catch::Contains("tuned for f32/n64k (" + names[1]));
  CHECK(ops::choose_adam_config(*dev, {p.n << 10}) == cands[0]);  // another class

  // A file from before Adam's elements and reads were searched: its Adam entries are dropped
  // (the class runs the default until tuned again), the rest of it still applies.
  nlohmann::json old = nlohmann::json::parse(std::ifstream(path));
  old["adam"][0]["config"] = {{"workgroup_size", 512}};
  std::ofstream(path) << old.dump();
  CHECK(read_tuning_file(path).of<ops::AdamFamily>().empty());
  old["adam"][0]["config"] = {{"workgroup_size", 512}, {"elems", 2}, {"reads", "gather"}};
  std::ofstream(path) << old.dump();
  CHECK_THROWS_WITH(read_tuning_file(path), Catch::Contains("Adam reads 'gather'"));
}

VKF_TEST_CASE("top-k tuner: candidates, the fastest correct one wins, a wrong one is rejected",
              "[shaders][tune][topk]") {
  const ops::TopKProblem p{DType::f32, 128, 37000, 10};
  CHECK(ops::topk_shape_class(p) == "f32/r512/v64k/k16");
  // On a device with subgroup arithmetic the other path comes right after the default.
  const auto cpu = tune::topk_candidates(cpu_info(8), p);
  REQUIRE(cpu.size() >= 4);
  CHECK(ops::describe(cpu[0]) == "chunks wg64x32 pruned");
  CHECK(cpu[1].path == ops::TopKPath::subgroup_rows);
  for (const auto& c : cpu) CHECK(ops::topk_config_misfit(cpu_info(8), c, p).empty());
  // k above the rows kernel's lists: chunks only.
  for (const auto& c : tune::topk_candidates(cpu_info(8), {DType::f32, 8, 5000, 40}))
    CHECK(c.path == ops::TopKPath::chunks);

  auto dev = test::new_device();
  const ops::TopKProblem small{DType::f32, 12, 1001, 10};
  const auto cands = tune::topk_candidates(dev->info(), small);
  REQUIRE(cands.size() >= 4);
  for (size_t i = 0; i < 4; ++i) {  // the candidates searched below (the shader tests run all)
    INFO(ops::describe(cands[i]));
    CHECK(tune::check_topk(*dev, cands[i], small).empty());
  }
  FakeTimer timer(described(cands), {{0, 1.0}, {1, 0.5}, {2, 0.2}, {3, 0.4}});
  const TunedTopK t = tune::tune_topk(*dev, small, timer, short_search(4), far_deadline());
  CHECK(ops::describe(t.config) == ops::describe(cands[2]));
  CHECK(t.default_name == ops::describe(cands[0]));
  CHECK(t.rejected.empty());

  auto options = short_search(4);
  const std::string wrong = ops::describe(cands[2]);
  options.sabotage = [&](const std::string& c) { return c == wrong; };
  CHECK_THAT(tune::check_topk(*dev, cands[2], small, options.sabotage),
             Catch::Contains("indices wrong at element 0"));
  FakeTimer again(described(cands), {{0, 1.0}, {1, 0.5}, {2, 0.2}, {3, 0.4}});
  const TunedTopK r = tune::tune_topk(*dev, small, again, options, far_deadline());
  CHECK(ops::describe(r.config) == ops::describe(cands[3]));
  REQUIRE(r.rejected.size() == 1);
  CHECK(r.rejected[0].first == wrong);

  // The entry round-trips through the tuning file, and the device then runs it.
  const std::filesystem::path dir = test::temp_dir("tuning_file_topk");
  TuningFile f;
  f.key = TuningKey::of(dev->info());
  f.of<ops::TopKFamily>().push_back(r);
  const std::string path = (dir / "t.tuning.json").string();
  write_tuning_file(path, f);
  const TuningFile back = read_tuning_file(path);
  REQUIRE(back.of<ops::TopKFamily>().size() == 1);
  CHECK(ops::describe(back.of<ops::TopKFamily>()[0].config) == ops::describe(r.config));
  CHECK(back.of<ops::TopKFamily>()[0].shape.k == 10);
  const auto tuning = make_tuning(back, path);
  dev->set_tuning(tuning);
  const ops::TopKChoice choice = ops::choose_topk(dev->info(), dev->tuning(), small);
  CHECK(choice.source == ops::ConfigSource::tuned);
  CHECK(ops::describe(choice.config) == ops::describe(r.config));
}

TEST_CASE("tuning file: attention, LayerNorm and cross-entropy entries round-trip",
          "[shaders][tune]") {
  const std::filesystem::path dir = test::temp_dir("tuning_file_families");
  DeviceInfo info = cpu_info(8);
  info.name = "llvmpipe (test)";
  TuningFile f;
  f.key = TuningKey::of(info);
  TunedAttention a;
  a.shape = {DType::f16, ops::AttentionKernel::backward_kv, 64, 64, 30, 31, false};
  a.shape_class = ops::attention_shape_class(a.shape);
  a.config = {0, 0, 0, ops::AttentionPath::rows, 3, Unroll::rolled};
  a.default_name = "rows4 unrolled";
  a.default_seconds = 0.5, a.seconds = 0.25, a.tried = 9, a.untried = 4;
  a.rejected = {{"rows8 rolled", "dK wrong at element 3"}};
  f.of<ops::AttentionFamily>().push_back(a);
  TunedLayerNorm l;
  l.shape = {DType::f32, true, 4096, 512};
  l.shape_class = ops::layer_norm_shape_class(l.shape);
  l.config = {128, ops::RowReduce::subgroup, ops::RowKernelConfig::Reads::texel};
  f.of<ops::LayerNormFamily>().push_back(l);
  TunedCrossEntropy c;
  c.shape = {DType::f32, 4096, 8000};
  c.shape_class = ops::cross_entropy_shape_class(c.shape);
  c.config = {512, ops::RowKernelConfig::Subgroup::off, ops::RowKernelConfig::Reads::texel};
  f.of<ops::CrossEntropyFamily>().push_back(c);
  const std::string path = (dir / "t.tuning.json").string();
  write_tuning_file(path, f);
  const TuningFile back = read_tuning_file(path);
  REQUIRE(back.of<ops::AttentionFamily>().size() == 1);
  CHECK(ops::same_kernel(back.of<ops::AttentionFamily>()[0].config, a.config));
  CHECK(back.of<ops::AttentionFamily>()[0].shape_class == "f16/bkv/d64/full/q64/k64");
  CHECK(back.of<ops::AttentionFamily>()[0].rejected == a.rejected);
  CHECK(back.of<ops::AttentionFamily>()[0].untried == 4);
  CHECK(back.of<ops::AttentionFamily>()[0].seconds == 0.25);
  REQUIRE(back.of<ops::LayerNormFamily>().size() == 1);
  CHECK(back.of<ops::LayerNormFamily>()[0].config == l.config);
  REQUIRE(back.of<ops::CrossEntropyFamily>().size() == 1);
  CHECK(ops::same_kernel(back.of<ops::CrossEntropyFamily>()[0].config,
                         c.config));  // the read path included
  const auto tuning = make_tuning(back, path);
  CHECK(tuning->of<ops::AttentionFamily>().count(a.shape_class) == 1);
  CHECK(tuning->of<ops::LayerNormFamily>().at("f32/bwd/d512") == l.config);
  CHECK(tuning->of<ops::CrossEntropyFamily>().count("f32/v16k") == 1);

  // A hand-edited entry whose class is not its shape's, or with a zero size, is malformed.
  std::string text;
  {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    const std::string p = (dir / "edited.json").string();
    std::ofstream(p) << t;
    return p;
  };
  CHECK_THROWS_WITH(read_tuning_file(edited("\"f32/bwd/d512\"", "\"f32/bwd/d64\"")),
                    Catch::Contains("malformed") && Catch::Contains("not its shape's"));
  CHECK_THROWS_WITH(read_tuning_file(edited("\"rows\": 3", "\"rows\": 0")),
                    Catch::Contains("malformed") && Catch::Contains("rows per lane"));
  CHECK_THROWS_WITH(read_tuning_file(edited("\"reads\": \"texel\"", "\"reads\": \"vector\"")),
                    Catch::Contains("malformed") && Catch::Contains("reads 'vector'"));
  // A LayerNorm entry from before the reads were tuned has none: the default's, when chosen.
  const TuningFile old =
      read_tuning_file(edited("\"reads\": \"texel\",\n        \"reduce\"", "\"reduce\""));
  CHECK(old.of<ops::LayerNormFamily>().at(0).config.reads ==
        ops::RowKernelConfig::Reads::automatic);
}

TEST_CASE(
    "family tuners: on a driver that compiles the rows kernels slowly, no minutes-long "
    "candidate",
    "[shaders][tune]") {
  DeviceInfo info = test::fake_cpu_info(16);
  info.driver_info = "Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)";
  for (auto kernel : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                      ops::AttentionKernel::backward_q}) {
    const ops::AttentionProblem p{DType::f32, kernel, 64, 64, 128, 128, true};
    const auto cands = tune::attention_candidates(info, p);
    REQUIRE(!cands.empty());
    CHECK(cands.front().rows == 1);  // the default, first
    size_t rows_path = 0;
    for (const ops::AttentionTiles& t : cands)
      if (t.path == ops::AttentionPath::rows) {
        ++rows_path;
        CHECK(t.rows <= 2);
        CHECK(t.unroll == ops::AttentionTiles::Unroll::rolled);
      }
    CHECK(rows_path == 2);  // 1 and 2 rows a lane, rolled
  }
  info.driver_info = "Mesa 22.3.6 (LLVM 15.0.6)";  // elsewhere, every rows candidate
  const ops::AttentionProblem p{DType::f32, ops::AttentionKernel::backward_kv, 64, 64, 128, 128,
                                true};
  size_t rows_path = 0;
  for (const ops::AttentionTiles& t : tune::attention_candidates(info, p))
    rows_path += t.path == ops::AttentionPath::rows ? 1 : 0;
  CHECK(rows_path == 12);
}
