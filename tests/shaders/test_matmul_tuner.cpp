// Which matmul kernel runs and why (engine/ops/matmul_choice.h), and the tuner (tune/): the
// search driven by a fake timer, its correctness guard, and the tuning file and its key.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/ops/matmul.h"
#include "engine/shader_registry.h"
#include "engine/tuning.h"
#include "engine/tuning_file.h"
#include "tests/support/fake_devices.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vk_test.h"
#include "tune/matmul_family.h"
#include "tune/model_tuner.h"

using namespace vkf;

namespace {

// One shape's search within options.budget_seconds, as `vkf tune` runs it.
TuningFile tune_one(Device& dev, const ops::MatmulProblem& p, tune::Timer& timer,
                    const tune::TunerOptions& options) {
  ops::OpProblems problems;
  problems.of<ops::MatmulFamily>().push_back(p);
  return tune::tune_model(dev, problems, timer, options).file;
}

DeviceInfo cpu_info(uint32_t subgroup) {
  return test::fake_cpu_info(subgroup);
}

// cpu_direct, 4 columns a lane instead of 8: a configuration that is in no table.
ops::MatmulConfig narrow_direct() {
  ops::MatmulConfig c = ops::matmul_config("cpu_direct");
  c.name = "narrow";
  c.bn = 32;
  c.tn = 4;
  return c;
}

// Times nothing: each candidate's seconds come from `time` (by its place in the candidate
// list), so the assertions name the winner with no timing in them.
class FakeTimer : public tune::Timer {
 public:
  explicit FakeTimer(std::vector<ops::MatmulConfig> order, std::map<size_t, double> times)
      : order_(std::move(order)), times_(std::move(times)) {}
  RecorderOptions recorder_options(const Device&) const override { return {}; }
  double seconds(Sequence&, const std::string& c, const std::string&, double) override {
    ++calls;
    for (size_t i = 0; i < order_.size(); ++i)
      if (order_[i].describe() == c) return times_.count(i) ? times_.at(i) : 1.0;
    FAIL("the tuner timed a configuration outside its candidates: " << c);
    return 0;
  }
  int calls = 0;

 private:
  std::vector<ops::MatmulConfig> order_;
  std::map<size_t, double> times_;
};

}  // namespace

TEST_CASE("matmul choice: forced, tuned or the table's row, and why", "[shaders][matmul][tune]") {
  const ops::MatmulProblem p{DType::f32, false, true, 1024, 1024, 1024};
  CHECK(ops::matmul_shape_class(p) == "f32/abt/m1k/n1k/k1k");
  CHECK(ops::matmul_shape_class({DType::f16, true, false, 16, 17, 8193}) ==
        "f16/atb/m16/n128/kbig");
  CHECK(ops::matmul_shape_class({DType::f32, false, false, 1025, 128, 129}) ==
        "f32/ab/mbig/n128/k1k");

  const DeviceInfo cpu = cpu_info(8);
  const ops::MatmulChoice table = ops::choose_matmul(cpu, nullptr, p);
  CHECK(table.source == ops::MatmulSource::table);
  CHECK(table.config.name == "cpu_direct");
  CHECK_THAT(table.why, Catch::Contains("CPU device, subgroups of 8"));

  Tuning tuning;
  tuning.origin = "test";
  tuning.of<ops::MatmulFamily>()[ops::matmul_shape_class(p)] = narrow_direct();
  const ops::MatmulChoice tuned = ops::choose_matmul(cpu, &tuning, p);
  CHECK(tuned.source == ops::MatmulSource::tuned);
  CHECK(tuned.config.same_kernel(narrow_direct()));
  CHECK_THAT(tuned.why, Catch::Contains("f32/abt/m1k/n1k/k1k") && Catch::Contains("test"));
  // Another shape class keeps the table's row.
  CHECK(ops::choose_matmul(cpu, &tuning, {DType::f32, false, true, 8, 1024, 1024}).source ==
        ops::MatmulSource::table);
  // A tuned entry this device cannot run is passed over, saying why.
  tuning.of<ops::MatmulFamily>()[ops::matmul_shape_class(p)] = ops::matmul_config("khr_coopmat");
  const ops::MatmulChoice over = ops::choose_matmul(cpu, &tuning, p);
  CHECK(over.source == ops::MatmulSource::table);
  CHECK(over.config.name == "cpu_direct");
  CHECK_THAT(over.why, Catch::Contains("passed over") && Catch::Contains("tensor-core"));
  // The table's choice is choose_matmul_config's, for every subgroup width and transpose.
  for (uint32_t sg : {8u, 16u})
    for (bool tb : {false, true}) {
      const DeviceInfo info = cpu_info(sg);
      CHECK(ops::choose_matmul(info, nullptr, {DType::f32, false, tb, 64, 64, 64}).config.name ==
            ops::choose_matmul_config(info, tb).name);
    }
}

namespace {

// The described candidates for `p` on `info` that `keep` selects.
template <class Keep>
std::vector<std::string> candidates_where(const DeviceInfo& info, const ops::MatmulProblem& p,
                                          Keep keep) {
  std::vector<std::string> names;
  for (const ops::MatmulConfig& c : tune::matmul_candidates(info, p))
    if (keep(c)) names.push_back(c.describe());
  return names;
}

bool contains(const std::vector<std::string>& names, const char* row) {
  return std::find(names.begin(), names.end(), ops::matmul_config(row).describe()) != names.end();
}

const ops::MatmulProblem k_f16_fc1{DType::f16, false, true, 4096, 2048, 512};
const ops::MatmulProblem k_f32_fc1{DType::f32, false, true, 4096, 2048, 512};

}  // namespace

// The NV v1 rows passed on an H100 but ran below its plain f16 row there: no table takes them,
// and the tuner times them for f16 on a device with VK_NV_cooperative_matrix (where this build
// has their kernel).
TEST_CASE("matmul tuner: the NV cooperative-matrix rows are candidates where the device has them",
          "[shaders][matmul][tune]") {
  const DeviceInfo nv = test::fake_nvidia_info();
  const auto nv_v1 = [](const ops::MatmulConfig& c) { return c.coopmat && !c.khr && !c.nv2; };
  REQUIRE(!tune::matmul_candidates(nv, k_f16_fc1).empty());
  CHECK(!tune::matmul_candidates(nv, k_f16_fc1)[0].coopmat);  // the prior: the plain f16 row
  const auto names = candidates_where(nv, k_f16_fc1, nv_v1);
  if (ops::matmul_coopmat_built()) {
    CHECK(names.size() == 2);
    CHECK(contains(names, "nvidia_coopmat"));
  } else {
    CHECK(names.empty());
  }
  CHECK(candidates_where(nv, k_f32_fc1, nv_v1).empty());
  DeviceInfo no_shape = nv;
  no_shape.nv_coopmat_f16_16x16x16 = false;
  CHECK(candidates_where(no_shape, k_f16_fc1, nv_v1).empty());
}

// The coopmat2 rows passed on an H200 and ran at 0.04-0.8x its KHR rows: no table takes them,
// and the tuner times them for f16 where the device runs them and this build has their kernel
// (Debian 13's glslc and newer).
TEST_CASE("matmul tuner: the coopmat2 rows are candidates where the device runs them",
          "[shaders][matmul][tune]") {
  const DeviceInfo nv2 = test::with_fake_coopmat2(test::fake_nvidia_info());
  const auto coopmat2 = [](const ops::MatmulConfig& c) { return c.nv2; };
  REQUIRE(!tune::matmul_candidates(nv2, k_f16_fc1).empty());
  CHECK(!tune::matmul_candidates(nv2, k_f16_fc1)[0].nv2);  // the prior is a table's row
  const auto names = candidates_where(nv2, k_f16_fc1, coopmat2);
  const bool built = !shaders::find(ops::matmul_config("nv_coopmat2").coopmat_kernel()).empty();
  if (built) {
    // Tiles around the table's three rows, every one of which this fake device's
    // granularities (16 x 16 x 16) divide: 6 tiles x 3 k blocks on 256 invocations, and the 4
    // of them with at most 128 accumulators an invocation on 128; the table's among them.
    for (const char* row : {"nv_coopmat2", "nv_coopmat2_256", "nv_coopmat2_64"})
      CHECK(contains(names, row));
    CHECK(names.size() == 30);
    const std::set<std::string> unique(names.begin(), names.end());
    CHECK(unique.size() == names.size());
    for (const ops::MatmulConfig& c : tune::matmul_candidates(nv2, k_f16_fc1))
      CHECK(ops::matmul_config_misfit(c, nv2).empty());
  } else {
    CHECK(names.empty());
  }
  DeviceInfo small = nv2;  // a driver whose flexible dimensions stop at 128
  small.nv_coopmat2.max_dimension = 128;
  const auto small_names = candidates_where(small, k_f16_fc1, coopmat2);
  CHECK(small_names.size() == (built ? 24u : 0u));
  CHECK(!contains(small_names, "nv_coopmat2_256"));
  CHECK(candidates_where(nv2, k_f32_fc1, coopmat2).empty());
  DeviceInfo mesa = nv2;  // Mesa 26's lavapipe: the extension without workgroup scope
  mesa.nv_coopmat2.workgroup_scope = mesa.nv_coopmat2.tensor_addressing = false;
  CHECK(candidates_where(mesa, k_f16_fc1, coopmat2).empty());
}

VKF_TEST_CASE("matmul runs the device's tuning for the shape class", "[shaders][matmul][tune]") {
  auto dev = test::new_device();
  if (dev->options().ops.matmul_texel_views)
    VKF_SKIP("VKF_MATMUL_TEXEL forces the read mode this test varies");
  // The table's row with the other read mode: a different kernel variant, named in the sequence.
  ops::MatmulConfig x =
      ops::choose_matmul(*dev, ops::MatmulProblem{DType::f32, false, true, 40, 36, 44}).config;
  x.texel = !dev->info().is_cpu();
  x.name = "flipped";
  const uint32_t m = 40, n = 36, k = 44;
  const std::vector<float> a = test::random_floats(m * k, 1), b = test::random_floats(n * k, 2);
  Buffer ab = dev->allocate(a.size() * 4, "A"), bb = dev->allocate(b.size() * 4, "B"),
         cb = dev->allocate(m * n * 4, "C");
  dev->upload(ab, a);
  dev->upload(bb, b);
  auto run = [&](const ops::MatmulConfig* forced) {
    ops::MatmulArgs args;
    args.a = ab, args.b = bb, args.c = cb;
    args.m = m, args.n = n, args.k = k;
    args.trans_b = true;
    args.config = forced;
    Recorder rec(*dev);
    ops::matmul(*dev, rec, args);
    Sequence seq = rec.finish();
    seq.run();
    return std::make_pair(seq.kernel_names(), dev->download<uint32_t>(cb, m * n));
  };
  const std::string flipped = *x.texel ? "matmul_texel" : "matmul";
  const std::string usual = *x.texel ? "matmul" : "matmul_texel";
  CHECK(run(nullptr).first == std::vector<std::string>{usual});
  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  tuning->of<ops::MatmulFamily>()[ops::matmul_shape_class({DType::f32, false, true, m, n, k})] = x;
  dev->set_tuning(tuning);
  const auto tuned = run(nullptr);
  CHECK(tuned.first == std::vector<std::string>{flipped});
  // Bit for bit what the same configuration gives when forced.
  dev->set_tuning(nullptr);
  CHECK(tuned.second == run(&x).second);
}

VKF_TEST_CASE("tuner: the fastest correct candidate wins, by a fake timer",
              "[shaders][matmul][tune]") {
  auto dev = test::new_device();
  const ops::MatmulProblem p{DType::f32, false, true, 64, 48, 40};
  const std::vector<ops::MatmulConfig> cands = tune::matmul_candidates(dev->info(), p);
  REQUIRE(cands.size() >= 6);
  // The prior first: the table's row, as an untuned run gets it.
  CHECK(cands.front().name == ops::choose_matmul_config(dev->info(), true).name);
  for (const ops::MatmulConfig& c : cands) CHECK(ops::matmul_config_fits(c, dev->info()));
  // On a CPU device the next is the prior through the other read path (texel views or storage
  // buffers): the choice that changes most from one driver version to the next.
  if (dev->info().is_cpu()) {
    ops::MatmulConfig flipped = cands.front();
    flipped.texel = !flipped.texel.value_or(false);
    CHECK(cands[1].same_kernel(flipped));
  }

  tune::TunerOptions options;
  options.max_candidates = 6;
  options.budget_seconds = 600;
  FakeTimer timer(cands, {{0, 1.0}, {2, 0.7}, {4, 0.5}, {5, 0.6}});
  const TuningFile f = tune_one(*dev, p, timer, options);
  REQUIRE(f.of<ops::MatmulFamily>().size() == 1);
  const TunedMatmul& t = f.of<ops::MatmulFamily>()[0];
  CHECK(t.config.same_kernel(cands[4]));
  CHECK(t.default_name == cands.front().name);
  CHECK(t.default_seconds == 1.0);
  CHECK(t.seconds == 0.5);
  CHECK(t.tried == 6);
  CHECK(t.rejected.empty());
  // Six candidates, then the winner and the default twice more each, alternating.
  CHECK(timer.calls == 6 + 2 * int(options.confirm_rounds));
  CHECK(f.key.mismatch(TuningKey::of(dev->info())).empty());

  // All slower than the default: the default stays.
  FakeTimer slow(cands, {{0, 0.1}});
  const TuningFile g = tune_one(*dev, p, slow, options);
  CHECK(g.of<ops::MatmulFamily>()[0].config.same_kernel(cands.front()));
}

namespace {

// Times every candidate at 1 s, but `lucky` at 0.5 s the first time only: a timing the machine's
// noise made, which the tuner must not keep.
class LuckyTimer : public tune::Timer {
 public:
  explicit LuckyTimer(std::string lucky) : lucky_(std::move(lucky)) {}
  RecorderOptions recorder_options(const Device&) const override { return {}; }
  double seconds(Sequence&, const std::string& c, const std::string&, double) override {
    ++calls;
    if (c != lucky_) return 1.0;
    return lucky_calls_++ == 0 ? 0.5 : 1.0;
  }
  int calls = 0;

 private:
  std::string lucky_;
  int lucky_calls_ = 0;
};

}  // namespace

VKF_TEST_CASE("tuner: a winner that is not faster when timed again keeps the default",
              "[shaders][matmul][tune]") {
  auto dev = test::new_device();
  const ops::MatmulProblem p{DType::f32, false, true, 64, 48, 40};
  const std::vector<ops::MatmulConfig> cands = tune::matmul_candidates(dev->info(), p);
  REQUIRE(cands.size() >= 4);
  tune::TunerOptions options;
  options.max_candidates = 4;
  LuckyTimer timer(cands[2].describe());
  const TuningFile f = tune_one(*dev, p, timer, options);
  const TunedMatmul& t = f.of<ops::MatmulFamily>().at(0);
  CHECK(t.config.same_kernel(cands.front()));
  CHECK(t.seconds == t.default_seconds);
  REQUIRE(t.rejected.size() == 1);
  CHECK(t.rejected[0].first == cands[2].describe());
  CHECK_THAT(t.rejected[0].second, Catch::Contains("not confirmed: 1.000x"));
  CHECK(timer.calls == 4 + 2 * int(options.confirm_rounds));

  // Without the confirmation (confirm_rounds 0), the one lucky timing would have won.
  options.confirm_rounds = 0;
  LuckyTimer once(cands[2].describe());
  const TuningFile g = tune_one(*dev, p, once, options);
  CHECK(g.of<ops::MatmulFamily>().at(0).config.same_kernel(cands[2]));
}

VKF_TEST_CASE("tuner: a candidate made wrong on purpose is rejected, saying why",
              "[shaders][matmul][tune]") {
  auto dev = test::new_device();
  const ops::MatmulProblem p{DType::f32, false, false, 33, 40, 24};
  const std::vector<ops::MatmulConfig> cands = tune::matmul_candidates(dev->info(), p);
  REQUIRE(cands.size() >= 6);
  const ops::MatmulConfig wrong = cands[3];
  auto sabotage = [&](const std::string& c) { return c == wrong.describe(); };
  // The guard itself: right without the hook, wrong with it.
  CHECK(tune::check_matmul(*dev, wrong, p).empty());
  CHECK_THAT(tune::check_matmul(*dev, wrong, p, sabotage), Catch::Contains("wrong at"));

  tune::TunerOptions options;
  options.max_candidates = 6;
  options.sabotage = sabotage;
  FakeTimer timer(cands, {{0, 1.0}, {3, 0.1}, {5, 0.4}});
  const TuningFile f = tune_one(*dev, p, timer, options);
  const TunedMatmul& t = f.of<ops::MatmulFamily>().at(0);
  CHECK(t.config.same_kernel(cands[5]));
  REQUIRE(t.rejected.size() == 1);
  CHECK(t.rejected[0].first == wrong.describe());
  CHECK_THAT(t.rejected[0].second, Catch::Contains("wrong at"));
}

namespace {

// Times every candidate at 1 s but those whose description ends in `fast` (0.4 s), and checks
// that a candidate said to split records the split's reduce.
class SplitTimer : public tune::Timer {
 public:
  explicit SplitTimer(std::string fast) : fast_(std::move(fast)) {}
  RecorderOptions recorder_options(const Device&) const override { return {}; }
  double seconds(Sequence& seq, const std::string& c, const std::string&, double) override {
    timed.push_back(c);
    const std::vector<std::string> names = seq.kernel_names();
    const bool reduces = std::any_of(names.begin(), names.end(), [](const std::string& k) {
      return k.rfind("matmul_split_reduce", 0) == 0;
    });
    if (c.find(" split") != std::string::npos) CHECK(reduces);
    const bool fast = c.size() >= fast_.size() && c.substr(c.size() - fast_.size()) == fast_;
    return fast ? 0.4 : 1.0;
  }
  std::vector<std::string> timed;

 private:
  std::string fast_;
};

}  // namespace

VKF_TEST_CASE("tuner: with a split-k workspace, the winner's split is timed too",
              "[shaders][matmul][tune]") {
  auto dev = test::new_device();
  if (dev->options().ops.matmul_split_k == false)
    VKF_SKIP("VKF_MATMUL_SPLIT_K=0 turns off the split this test times");
  // A weight gradient's form and a long k: the rule leaves it whole here (under 16 Mi flops),
  // the tuner times 2, 4, 6 and 9 slices (8 and 16 round to those at k = 1100).
  ops::MatmulProblem p{DType::f32, true, false, 48, 40, 1100, true};
  tune::TunerOptions options;
  options.max_candidates = 5;  // each search's: five kernels, then the rule and four splits
  SplitTimer timer(" split4");
  const TuningFile f = tune_one(*dev, p, timer, options);
  const TunedMatmul& t = f.of<ops::MatmulFamily>().at(0);
  REQUIRE(t.config.split_k);
  CHECK(*t.config.split_k == 4);
  CHECK(t.default_seconds == 1.0);
  CHECK(t.seconds == 0.4);
  CHECK(t.rejected.empty());
  for (const char* split : {" split2", " split4", " split6", " split9"})
    CHECK(std::any_of(timer.timed.begin(), timer.timed.end(), [&](const std::string& c) {
      return c.size() > 7 && c.substr(c.size() - 7) == split;
    }));
  // The tuned count is what the engine then runs, and what a caller sizes its workspace by.
  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  tuning->of<ops::MatmulFamily>()[t.shape_class] = t.config;
  dev->set_tuning(tuning);
  ops::MatmulArgs args;
  args.m = p.m, args.n = p.n, args.k = p.k, args.trans_a = true;
  CHECK(ops::matmul_split_k(*dev, args, true).slices == 4);
  dev->set_tuning(nullptr);
  CHECK(ops::matmul_split_k(*dev, args, true).slices == 1);

  // Slower splits leave the rule's choice (no split_k in the entry).
  SplitTimer none(" no such configuration");
  CHECK(!tune_one(*dev, p, none, options).of<ops::MatmulFamily>().at(0).config.split_k);
  // Without a workspace, nothing split is timed.
  p.workspace = false;
  SplitTimer unsplit(" split4");
  CHECK(!tune_one(*dev, p, unsplit, options).of<ops::MatmulFamily>().at(0).config.split_k);
  for (const std::string& c : unsplit.timed) CHECK(c.find("split") == std::string::npos);
}

VKF_TEST_CASE("tuner: a split made wrong on purpose is rejected", "[shaders][matmul][tune]") {
  auto dev = test::new_device();
  const ops::MatmulProblem p{DType::f32, true, false, 48, 40, 1100, true};
  // The prior as the tuner names it (its read path made explicit).
  const ops::MatmulConfig row = tune::matmul_candidates(dev->info(), p).front();
  // The check runs the split (three slices) where the problem has a workspace: a kernel whose
  // partial products were wrong would fail it; the hook stands in for one.
  CHECK(tune::check_matmul(*dev, row, p).empty());
  ops::MatmulConfig split = row;
  split.split_k = 4;
  auto sabotage = [&](const std::string& c) { return c == split.describe(); };
  CHECK_THAT(tune::check_matmul(*dev, split, p, sabotage), Catch::Contains("wrong at"));
  tune::TunerOptions options;
  options.max_candidates = 5;
  options.sabotage = sabotage;
  SplitTimer timer(" split4");
  const TunedMatmul t = tune_one(*dev, p, timer, options).of<ops::MatmulFamily>().at(0);
  CHECK(t.config.split_k.value_or(0) != 4);
  REQUIRE(t.rejected.size() == 1);
  CHECK(t.rejected[0].first == split.describe());
}

TEST_CASE("tuning file: written, read back, and another driver's ignored with a note",
          "[shaders][matmul][tune]") {
  const std::filesystem::path dir = test::temp_dir("tuning_file");
  DeviceInfo info = cpu_info(8);
  info.name = "llvmpipe (test)";
  info.vendor_id = 0x10005;
  info.driver_version = 0x5800006;
  info.pipeline_cache_uuid[0] = 0xab;
  const std::string path = tuning_file_path(dir.string(), info);
  CHECK(path.size() > 12);
  CHECK(path.substr(path.size() - 12) == ".tuning.json");
  CHECK(tuning_file_path("", info).empty());

  TuningFile f;
  f.key = TuningKey::of(info);
  TunedMatmul t;
  t.shape = {DType::f16, true, false, 512, 2048, 4096};
  t.shape_class = ops::matmul_shape_class(t.shape);
  t.config = narrow_direct();
  t.config.texel = false;
  t.default_name = "cpu_direct";
  t.default_seconds = 0.25;
  t.seconds = 0.125;
  t.tried = 7;
  t.rejected = {{"wg8 32x64x1 t32x8 direct texel", "wrong at 37x45x29"}};
  f.of<ops::MatmulFamily>().push_back(t);
  write_tuning_file(path, f);

  const TuningFile back = read_tuning_file(path);
  REQUIRE(back.of<ops::MatmulFamily>().size() == 1);
  CHECK(back.of<ops::MatmulFamily>()[0].config.same_kernel(t.config));
  CHECK(back.of<ops::MatmulFamily>()[0].config.name == "narrow");
  CHECK(back.of<ops::MatmulFamily>()[0].shape_class == "f16/atb/m1k/nbig/kbig");
  CHECK(back.of<ops::MatmulFamily>()[0].rejected == t.rejected);
  CHECK(back.of<ops::MatmulFamily>()[0].seconds == 0.125);
  const TuningLoad ok = load_tuning(path, info);
  REQUIRE(ok.tuning);
  CHECK(ok.note.empty());
  CHECK(ok.tuning->of<ops::MatmulFamily>().at(t.shape_class).same_kernel(t.config));
  CHECK(ok.tuning->origin == path);

  // A driver update: the same device, another driver version.
  DeviceInfo updated = info;
  updated.driver_version += 1;
  const TuningLoad old = load_tuning(path, updated);
  CHECK(!old.tuning);
  CHECK_THAT(old.note, Catch::Contains("ignored") && Catch::Contains("driver"));
  // Another build of the same version (pipelineCacheUUID).
  DeviceInfo rebuilt = info;
  rebuilt.pipeline_cache_uuid[0] = 0xcd;
  CHECK_THAT(load_tuning(path, rebuilt).note, Catch::Contains("pipelineCacheUUID"));
  // Missing and malformed files.
  CHECK_THAT(load_tuning((dir / "none.json").string(), info).note, Catch::Contains("no tuning"));
  std::ofstream((dir / "bad.json").string()) << "{\"format\": \"vkformer-tuning/1\"}";
  CHECK_THROWS_WITH(read_tuning_file((dir / "bad.json").string()),
                    Catch::Contains("bad.json") && Catch::Contains("malformed"));
  CHECK(!load_tuning((dir / "bad.json").string(), info).tuning);

  // A KHR row's staging buffers travel with it; a file from before them reads as one; a count
  // the kernel has no code for is refused.
  TuningFile staged = f;
  staged.of<ops::MatmulFamily>()[0].config = ops::matmul_config("khr_coopmat_2stage");
  const std::string staged_path = (dir / "staged.json").string();
  write_tuning_file(staged_path, staged);
  CHECK(read_tuning_file(staged_path).of<ops::MatmulFamily>().at(0).config.stages == 2);
  auto rewrite = [&](const std::string& from, const std::string& to) {
    std::ifstream in(staged_path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(staged_path) << text;
  };
  rewrite("\"stages\": 2,", "");
  CHECK(read_tuning_file(staged_path).of<ops::MatmulFamily>().at(0).config.stages == 1);
  rewrite("\"khr\": true,", "\"khr\": true, \"stages\": 3,");
  CHECK_THROWS_WITH(read_tuning_file(staged_path), Catch::Contains("3 stages"));

  // A coopmat2 row is kept as one (its "nv2" key; files from before it have none, and read as
  // the row they name); "nv2" on a row that is not a plain coopmat one is refused.
  TuningFile nv2 = f;
  nv2.of<ops::MatmulFamily>()[0].config = ops::matmul_config("nv_coopmat2_256");
  write_tuning_file(staged_path, nv2);
  const ops::MatmulConfig nv2_back =
      read_tuning_file(staged_path).of<ops::MatmulFamily>().at(0).config;
  CHECK(nv2_back.nv2);
  CHECK(nv2_back.same_kernel(ops::matmul_config("nv_coopmat2_256")));
  rewrite("\"coopmat\": true,", "\"coopmat\": false,");
  CHECK_THROWS_WITH(read_tuning_file(staged_path), Catch::Contains("coopmat2 row without coopmat"));

  // A tuned split and the workspace it was timed with travel with the entry; files from before
  // split-k have neither (the rule, no workspace); a count the engine never cuts is refused.
  TuningFile split = f;
  split.of<ops::MatmulFamily>()[0].shape.workspace = true;
  split.of<ops::MatmulFamily>()[0].config.split_k = 6;
  write_tuning_file(staged_path, split);
  const TunedMatmul split_back = read_tuning_file(staged_path).of<ops::MatmulFamily>().at(0);
  CHECK(split_back.shape.workspace);
  CHECK(split_back.config.split_k == 6u);
  const TunedMatmul plain_back = read_tuning_file(path).of<ops::MatmulFamily>().at(0);
  CHECK(!plain_back.shape.workspace);
  CHECK(!plain_back.config.split_k);
  rewrite("\"split_k\": 6", "\"split_k\": 17");
  CHECK_THROWS_WITH(read_tuning_file(staged_path), Catch::Contains("17 slices"));
}

TEST_CASE("robust 41.4: matmul_config_misfit refuses tilings the kernels cannot run",
          "[shaders][matmul][tune]") {
  const DeviceInfo cpu8 = test::fake_cpu_info(8), cpu16 = test::fake_cpu_info(16);
  const DeviceInfo nv = test::fake_nvidia_info();
  // Every table row still fits where it did (its device's kind).
  CHECK(ops::matmul_config_misfit(ops::matmul_config("cpu_direct"), cpu8).empty());
  CHECK(ops::matmul_config_misfit(ops::matmul_config("cpu_direct16"), cpu16).empty());
  CHECK(ops::matmul_config_misfit(ops::matmul_config("cpu_direct16_nn"), cpu16).empty());
  for (const char* row : {"nvidia", "amd", "intel", "fallback", "nvidia_coopmat"})
    CHECK(ops::matmul_config_misfit(ops::matmul_config(row), nv).empty());
  auto why = [&](const ops::MatmulConfig& c, const DeviceInfo& info) {
    return ops::matmul_config_misfit(c, info);
  };
  // The issue's: 64 invocations on a 64x64 tile of 4x4 blocks (256 needed), and the same
  // mismatch at 128 and 256.
  CHECK_THAT(why({"x", 64, 64, 64, 8, 4, 4, true}, nv), Catch::Contains("does not cover"));
  CHECK_THAT(why({"x", 128, 64, 64, 8, 4, 4, true}, nv), Catch::Contains("needs 256"));
  CHECK_THAT(why({"x", 256, 64, 64, 8, 8, 8, true}, nv), Catch::Contains("needs 64"));
  // The direct path: tm 1 or 4 on 8 lanes, tn 3 on a 64-wide tile, bn not lanes x tn.
  CHECK_THAT(why({"x", 8, 1, 64, 1, 1, 8, false}, cpu8), Catch::Contains("direct-path"));
  CHECK_THAT(why({"x", 8, 4, 64, 1, 4, 8, false}, cpu8), Catch::Contains("direct-path"));
  CHECK_THAT(why({"x", 8, 32, 64, 1, 32, 3, false}, cpu8), Catch::Contains("not a multiple"));
  CHECK_THAT(why({"x", 8, 32, 32, 1, 32, 8, false}, cpu8), Catch::Contains("direct-path"));
  // A block too large to hold, and zero sizes.
  CHECK_THAT(why({"x", 8, 1024, 512, 1, 1024, 64, false}, cpu8), Catch::Contains("accumulators"));
  CHECK_THAT(why({"x", 0, 32, 32, 8, 4, 4, true}, nv), Catch::Contains("zero"));
  // NV cooperative-matrix rows are whole 16x16x16 fragments.
  ops::MatmulConfig frag = ops::matmul_config("nvidia_coopmat");
  frag.bk = 24;
  CHECK_THAT(why(frag, nv), Catch::Contains("fragments"));
}
