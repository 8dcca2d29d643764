// vkf tune and --tune: a tuning file written for this device, used by vkf train (which says so
// in one line), another driver's ignored with a note, a missing one an error, export/import.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <vector>

#include "engine/ops/loss_choice.h"
#include "engine/tuning_file.h"
#include "model/data/tokenizer.h"
#include "tests/apps/cli_support.h"
#include "tests/support/small_corpus.h"

namespace fs = std::filesystem;
using vkf::test::CliResult;
using vkf::test::k_vkf;
using vkf::test::run_shell;
using vkf::test::run_vkf;

TEST_CASE("vkf tune writes a tuning file that vkf train runs, and says so", "[apps][cli][tune]") {
  const fs::path dir = vkf::test::temp_dir("cli-tune");
  const fs::path file = dir / "tuned.json";
  CliResult r = run_vkf("tune --model " + vkf::test::untrained_model().string() +
                        " --tokens 64 --budget 3s --out " + file.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("speed-up"));
  CHECK_THAT(r.err, Catch::Contains("wrote " + file.string()));
  const vkf::TuningFile f = vkf::read_tuning_file(file.string());
  CHECK(!f.of<vkf::ops::MatmulFamily>()
             .empty());  // the first family: its first class is always searched
  auto check_entries = [](const auto& entries) {
    for (const auto& t : entries) {
      CHECK(t.tried >= 1);
      CHECK(t.seconds > 0);
      CHECK(t.seconds <= t.default_seconds);
    }
  };
  check_entries(f.of<vkf::ops::MatmulFamily>());
  check_entries(f.of<vkf::ops::AttentionFamily>());
  check_entries(f.of<vkf::ops::LayerNormFamily>());
  check_entries(f.of<vkf::ops::CrossEntropyFamily>());
  check_entries(f.of<vkf::ops::TopKFamily>());
  check_entries(f.of<vkf::ops::AdamFamily>());
  // Every family the model runs (decoding's top-k at translate's defaults too): in the summary's
  // table, or among the classes the budget left.
  for (const char* family : {"attention ", "layer_norm ", "cross_entropy ", "topk ", "adam "})
    CHECK_THAT(r.out, Catch::Contains(family));

  r = run_vkf(vkf::test::train_args(dir / "run", "--max-steps 1 --tune " + file.string()));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("vkf train: kernels tuned (" + file.string() + ")"));

  // The same file as another driver version wrote it: ignored, with a note, and the run goes on
  // with the tables.
  vkf::TuningFile old = f;
  old.key.driver_version += 1;
  old.key.driver = "an older driver";
  const fs::path stale = dir / "stale.json";
  vkf::write_tuning_file(stale.string(), old);
  r = run_vkf(vkf::test::train_args(dir / "run2", "--max-steps 1 --tune " + stale.string()));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("kernels default (the tuning file " + stale.string() +
                                    " is ignored: it is for driver an older driver"));

  // Named but missing, or malformed: an error before any work.
  r = run_vkf(
      vkf::test::train_args(dir / "run3", "--max-steps 1 --tune " + (dir / "none.json").string()));
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("no tuning file"));
  std::ofstream(dir / "bad.json") << "not json";
  r = run_vkf(
      vkf::test::train_args(dir / "run4", "--max-steps 1 --tune " + (dir / "bad.json").string()));
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("malformed"));

  // Import into a cache directory of its own, export back out: the same entries. Another
  // driver's file is refused.
  const std::string cache = "VKF_CACHE_DIR=" + (dir / "cache").string() + " ";
  r = run_shell(cache + k_vkf + " tune --import " + file.string());
  CHECK(r.status == 0);
  r = run_shell(cache + k_vkf + " tune --export " + (dir / "out.json").string());
  CHECK(r.status == 0);
  const vkf::TuningFile exported = vkf::read_tuning_file((dir / "out.json").string());
  CHECK(exported.of<vkf::ops::MatmulFamily>().size() == f.of<vkf::ops::MatmulFamily>().size());
  CHECK(exported.of<vkf::ops::AttentionFamily>().size() ==
        f.of<vkf::ops::AttentionFamily>().size());
  CHECK(exported.of<vkf::ops::LayerNormFamily>().size() ==
        f.of<vkf::ops::LayerNormFamily>().size());
  CHECK(exported.of<vkf::ops::CrossEntropyFamily>().size() ==
        f.of<vkf::ops::CrossEntropyFamily>().size());
  CHECK(exported.of<vkf::ops::TopKFamily>().size() == f.of<vkf::ops::TopKFamily>().size());
  CHECK(exported.of<vkf::ops::AdamFamily>().size() == f.of<vkf::ops::AdamFamily>().size());
  r = run_shell(cache + k_vkf + " tune --import " + stale.string());
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("does not apply"));

  // A storage type the tuner does not know is refused before anything runs.
  r = run_vkf("tune --preset tiny --dtype f64 --out " + (dir / "f64.json").string());
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("--dtype"));
  CHECK(!fs::exists(dir / "f64.json"));
}

TEST_CASE("vkf train --tune auto tunes on a new device, then vkf translate reuses the file",
          "[apps][cli][tune]") {
  const fs::path dir = vkf::test::temp_dir("cli-tune-auto");
  // A cache directory of its own, so this is the first run on this device and driver there (the
  // lavapipe shader cache stays the tests', inherited through MESA_SHADER_CACHE_DIR).
  const std::string env =
      "VKF_CACHE_DIR=" + (dir / "cache").string() + " VKF_TUNE=auto VKF_TUNE_BUDGET=3 ";
  CliResult r = run_shell(env + k_vkf + " " +
                          vkf::test::train_args(dir / "run", "--max-steps 1 --precision fp32"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The vocabulary's size is read before the tuning: the loss is among the families.
  CHECK_THAT(r.err,
             Catch::Contains(
                 "yet: tuning its kernels (matmul, attention, LayerNorm, cross-entropy, Adam)"));
  CHECK_THAT(r.err, Catch::Contains("vkf train: kernels tuned (" + (dir / "cache").string()));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir / "cache"))
    if (e.path().string().ends_with(".tuning.json")) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  const vkf::TuningFile f = vkf::read_tuning_file(files[0].string());
  REQUIRE(!f.of<vkf::ops::MatmulFamily>()
               .empty());  // the first family's first class is always searched
  for (const auto& t : f.of<vkf::ops::MatmulFamily>()) CHECK(t.shape.dtype == vkf::DType::f32);
  // The loss's shape has the vocabulary's size. Where the budget ran out before the loss (the
  // sanitizer build's host code is several times slower), the class left at its default is named.
  const uint32_t vocab =
      uint32_t(vkf::model::Tokenizer::load(vkf::test::small_corpus().vocab.string()).vocab_size());
  if (f.of<vkf::ops::CrossEntropyFamily>().empty()) {
    CHECK_THAT(r.err, Catch::Contains("budget spent;") &&
                          Catch::Contains("cross_entropy " + vkf::ops::cross_entropy_shape_class(
                                                                 {vkf::DType::f32, 1, vocab})));
  } else {
    REQUIRE(f.of<vkf::ops::CrossEntropyFamily>().size() == 1);
    CHECK(f.of<vkf::ops::CrossEntropyFamily>()[0].shape.vocab == vocab);
  }

  // The next command on this device reads the file instead of tuning again.
  std::ofstream(dir / "in.txt") << "a small test\n";
  r = run_shell(env + k_vkf + " translate --model " + vkf::test::trained_model().string() +
                " --input " + (dir / "in.txt").string());
  CHECK(r.status == 0);
  CHECK(r.err.find("no tuning file") == std::string::npos);
  CHECK_THAT(r.err, Catch::Contains("vkf translate: kernels tuned (" + files[0].string() + ")"));

  // A budget spent on the first class: the classes left at their defaults are named.
  r = run_shell("VKF_CACHE_DIR=" + (dir / "cache3").string() +
                " VKF_TUNE=auto VKF_TUNE_BUDGET=0.001 " + k_vkf + " " +
                vkf::test::train_args(dir / "run3", "--max-steps 1 --precision fp32"));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("budget spent;") && Catch::Contains("keep the defaults:") &&
                        Catch::Contains("cross_entropy f32/v1k"));

  // A budget the tools cannot read is an error before any tuning.
  r = run_shell("VKF_CACHE_DIR=" + (dir / "cache2").string() +
                " VKF_TUNE=auto VKF_TUNE_BUDGET=soon " + k_vkf + " " +
                vkf::test::train_args(dir / "run2", "--max-steps 1"));
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("VKF_TUNE_BUDGET must be a positive number of seconds"));
}
