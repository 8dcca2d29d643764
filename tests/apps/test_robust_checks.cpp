// Issue 41, second round (the checks): what a tuning file, a tuner flag, a `vkf bench` result
// file, a --rows pattern, an environment variable or a numeric flag may hold, run as a user runs
// vkf. Each case names the item it covers ("robust 41.4: ...").
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "engine/tuning_file.h"
#include "tests/apps/cli_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vk_test.h"

namespace fs = std::filesystem;
using vkf::test::CliResult;
using vkf::test::k_vkf;
using vkf::test::run_shell;
using vkf::test::run_vkf;

namespace {

// One matmul configuration in every shape class a problem can have (each form, storage type and
// size bucket), keyed to this device and driver: whatever a model runs, it meets this one.
vkf::TuningFile everywhere(const vkf::ops::MatmulConfig& c) {
  vkf::TuningFile f;
  f.key = vkf::TuningKey::of(vkf::test::device().info());
  for (vkf::DType t : {vkf::DType::f32, vkf::DType::f16})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (uint32_t m : {16u, 128u, 1024u, 4096u})
          for (uint32_t n : {16u, 128u, 1024u, 4096u})
            for (uint32_t k : {16u, 128u, 1024u, 4096u}) {
              vkf::TunedMatmul e;
              e.shape = {t, ta, tb, m, n, k};
              e.shape_class = vkf::ops::matmul_shape_class(e.shape);
              e.config = c;
              e.default_name = "fallback";
              e.default_seconds = e.seconds = 1e-3;
              e.tried = 1;
              f.of<vkf::ops::MatmulFamily>().push_back(e);
            }
  return f;
}

std::vector<std::string> losses(const std::string& log) {
  static const std::regex loss(R"(loss +([0-9.]+))");
  std::vector<std::string> out;
  for (std::sregex_iterator i(log.begin(), log.end(), loss), end; i != end; ++i)
    out.push_back((*i)[1]);
  return out;
}

}  // namespace

TEST_CASE(
    "robust 41.4: a tuning file's inconsistent matmul tiles are dropped, translate and "
    "train run the defaults",
    "[apps][cli][robust]") {
  const fs::path dir = vkf::test::temp_dir("robust-41-4");
  // The issue's configuration: a workgroup of 64 on a 64x64 tile in 4x4 blocks (256 needed).
  const fs::path bad = dir / "bad.json";
  vkf::write_tuning_file(bad.string(), everywhere({"hand", 64, 64, 64, 8, 4, 4, true}));
  std::ofstream(dir / "in.txt") << "a small test\nthe second line\nand a third\n";
  const std::string translate = "translate --model " + vkf::test::trained_model().string() +
                                " --input " + (dir / "in.txt").string() + " --beam 1 --tune ";
  const CliResult want = run_vkf(translate + "off");
  REQUIRE(want.status == 0);
  CliResult r = run_vkf(translate + bad.string());
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out == want.out);
  CHECK_THAT(r.err,
             Catch::Contains("tuning entry dropped") && Catch::Contains("does not cover its tile"));

  // A block of 1024 x 64 accumulators: refused before it is compiled (it once ran for minutes).
  const fs::path huge = dir / "huge.json";
  vkf::write_tuning_file(huge.string(), everywhere({"hand", 8, 1024, 512, 1, 1024, 64, false}));
  const auto start = std::chrono::steady_clock::now();
  r = run_vkf(translate + huge.string());
  CHECK(r.status == 0);
  CHECK(r.out == want.out);
  CHECK_THAT(r.err, Catch::Contains("accumulators"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));

  // Training: the same losses as the defaults'.
  const CliResult train_off = run_vkf(
      vkf::test::train_args(dir / "off", "--max-steps 3 --seed 7 --log-every 1 --tune off"));
  REQUIRE(train_off.status == 0);
  r = run_vkf(vkf::test::train_args(dir / "bad",
                                    "--max-steps 3 --seed 7 --log-every 1 --tune " + bad.string()));
  CHECK(r.status == 0);
  REQUIRE(!losses(train_off.err).empty());
  CHECK(losses(r.err) == losses(train_off.err));

  // --import reports what it dropped, and copies none of it.
  const std::string cache = "VKF_CACHE_DIR=" + (dir / "cache").string() + " ";
  r = run_shell(cache + k_vkf + " tune --import " + bad.string() + " --out " +
                (dir / "imported.json").string());
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("dropped matmul f32/ab/m16/n16/k16 (wg64 64x64x8 t4x4") &&
                        Catch::Contains("0 entries passed their checks, 512 dropped"));
  CHECK(
      vkf::read_tuning_file((dir / "imported.json").string()).of<vkf::ops::MatmulFamily>().empty());
}

TEST_CASE(
    "robust 41.4: a tuning file's entries are checked against the reference once per "
    "device, and a wrong one is dropped",
    "[apps][cli][robust]") {
  const fs::path dir = vkf::test::temp_dir("robust-41-4-check");
  // A consistent entry (the fallback row's tiles) in the one class the tiny model's
  // translation projects its vocabulary in: it passes its check, which a second run remembers.
  vkf::TuningFile f;
  f.key = vkf::TuningKey::of(vkf::test::device().info());
  vkf::TunedMatmul e;
  e.shape = {vkf::DType::f32, false, true, 3, 96, 32, true};
  e.shape_class = vkf::ops::matmul_shape_class(e.shape);
  e.config = vkf::ops::matmul_config("fallback");
  e.default_name = "cpu_direct";
  e.default_seconds = e.seconds = 1e-3;
  e.tried = 1;
  f.of<vkf::ops::MatmulFamily>().push_back(e);
  const fs::path file = dir / "one.json";
  vkf::write_tuning_file(file.string(), f);
  std::ofstream(dir / "in.txt") << "a small test\n";
  const std::string cache = "VKF_CACHE_DIR=" + (dir / "cache").string() + " ";
  // The same entry computing a wrong answer (the test hook corrupts its checked output, as a
  // wrong kernel would): it fits the device and passes every consistency check, and still is
  // dropped by name, copied nowhere, and not remembered.
  const fs::path imported = dir / "imported.json";
  CliResult r = run_shell(cache + k_vkf + " tune --import " + file.string() + " --out " +
                          imported.string() + " --wrong-kernel '^matmul f32/'");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("dropped matmul f32/") &&
                        Catch::Contains("wrong against the reference") &&
                        Catch::Contains("0 entries passed their checks, 1 dropped"));
  CHECK(vkf::read_tuning_file(imported.string()).of<vkf::ops::MatmulFamily>().empty());

  // The entry as it is: checked on first use (the failure above was not remembered), then known.
  const std::string cmd = cache + k_vkf + " translate --model " +
                          vkf::test::trained_model().string() + " --input " +
                          (dir / "in.txt").string() + " --beam 1 --tune " + file.string();
  r = run_shell(cmd);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::Contains("checked 1 tuning entries of " + file.string()));
  CHECK_THAT(r.err, !Catch::Contains("dropped"));
  r = run_shell(cmd);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, !Catch::Contains("checked") && Catch::Contains("kernels tuned"));
}

TEST_CASE("robust 41.6: a tuning budget past any clock is refused, naming --budget",
          "[apps][cli][robust]") {
  const fs::path dir = vkf::test::temp_dir("robust-41-6");
  const fs::path out = dir / "x.json";
  CliResult r =
      run_vkf("tune --preset tiny --out " + out.string() + " --budget 99999999999999999999");
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("--budget") && Catch::Contains("longer than a year"));
  CHECK(!fs::exists(out));
  // The same rule for training's --max-time.
  r = run_vkf(vkf::test::train_args(dir / "run", "--max-steps 1 --max-time 9999999999h"));
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("--max-time") && Catch::Contains("longer than a year"));
}

namespace {

// A real result file (the committed lavapipe results) with `edit` applied, written to `to`.
fs::path edited_result(const fs::path& to, const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream in(fs::path(VKF_SOURCE_DIR) / "bench/results/lavapipe-epyc-256bit" /
                   "vkf_bench_standard.json");
  nlohmann::json j = nlohmann::json::parse(in);
  edit(j);
  std::ofstream(to) << j.dump();
  return to;
}

}  // namespace

TEST_CASE("robust 41.7: bench compare refuses impossible counts and keeps its table whole",
          "[apps][cli][robust]") {
  const fs::path dir = vkf::test::temp_dir("robust-41-7");
  // "failed" must be a whole count in range, and equal the FAIL rows: 0.5 and 2^40 were taken
  // as 0.
  for (const nlohmann::json& v : {nlohmann::json(0.5), nlohmann::json(uint64_t(1) << 40),
                                  nlohmann::json(-1), nlohmann::json("0")}) {
    const fs::path f = edited_result(dir / "failed.json", [&](nlohmann::json& j) {
      j["failed"] = v;
      j["devices"][0]["failed"] = v;
    });
    const CliResult r = run_vkf("bench compare " + f.string());
    INFO(v.dump() << ": " << r.err);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains(f.string()) && Catch::Contains("'failed'"));
  }
  const fs::path repeat =
      edited_result(dir / "repeat.json", [](nlohmann::json& j) { j["repeat"] = 2.5; });
  CliResult r = run_vkf("bench compare " + repeat.string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("'repeat'") && Catch::Contains("must be a whole number"));

  // A '|' or a line break in any text the files hold stays inside its cell.
  const fs::path hostile = edited_result(dir / "hostile.json", [](nlohmann::json& j) {
    j["devices"][0]["label"] = "dev | one\nsecond line";
    j["host"]["cpu"] = "cpu\n| x |";
    for (nlohmann::json& row : j["devices"][0]["rows"]) {
      row["title"] = row["title"].get<std::string>() + " | a\nb";
      row["unit"] = "u|\r\nv";
    }
  });
  r = run_vkf("bench compare " + hostile.string());
  REQUIRE(r.status == 0);
  const size_t table = r.out.find("\n| row |");
  REQUIRE(table != std::string::npos);
  std::istringstream lines(r.out.substr(table + 1));
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    INFO(line);
    CHECK(line.starts_with("|"));
    CHECK(line.ends_with("|"));
    ++n;
  }
  CHECK(n == 70 + 2);  // the file's rows, the header and its rule
  for (const char* list : {"- [1] dev \\| one second line", "cpu \\| x \\|"})
    CHECK_THAT(r.out, Catch::Contains(list));
}

TEST_CASE("robust 41.16: bench compare names the file whose host is not an object",
          "[apps][cli][robust]") {
  const fs::path dir = vkf::test::temp_dir("robust-41-16-host");
  for (const nlohmann::json& host :
       {nlohmann::json::array({1, 2}), nlohmann::json("cpu"), nlohmann::json{{"cpu", 7}}}) {
    const fs::path f =
        edited_result(dir / "host.json", [&](nlohmann::json& j) { j["host"] = host; });
    const CliResult r = run_vkf("bench compare " + f.string());
    INFO(host.dump() << ": " << r.err);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains(f.string() + ": field 'host"));
    CHECK_THAT(r.err, !Catch::Contains("json.exception"));
  }
}

TEST_CASE("robust 41.10: a hostile --rows pattern is refused or matched in linear time",
          "[apps][cli][robust]") {
  // 20,000 nested groups overflowed the stack of std::regex's parser.
  CliResult r =
      run_vkf("bench --list --rows '" + std::string(20000, '(') + std::string(20000, ')') + "'");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("--rows") && Catch::Contains("at most 1000"));
  // A pattern std::regex backtracks on forever: RE2 answers at once.
  const auto start = std::chrono::steady_clock::now();
  r = run_vkf("bench --list --rows '(.*)*$x'");
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  // Not a pattern: one line, naming the flag.
  r = run_vkf("bench --list --rows '(matmul'");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("--rows '(matmul' is not a regular expression"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  r = run_vkf("bench --list --rows 'peak/fp32'");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::StartsWith("peak/fp32_fma\t"));
}

TEST_CASE("robust 41.12: LP_NATIVE_VECTOR_WIDTH other than 128, 256 or 512 is refused",
          "[apps][cli][robust]") {
  CliResult r = run_shell("LP_NATIVE_VECTOR_WIDTH=7 " + k_vkf + " devices");
  CHECK(r.status == 1);
  CHECK_THAT(r.err,
             Catch::Contains("LP_NATIVE_VECTOR_WIDTH='7'") && Catch::Contains("128, 256 or 512"));
  r = run_shell("LP_NATIVE_VECTOR_WIDTH=256 " + k_vkf + " devices");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("256 bits"));
}

TEST_CASE("robust 41.16: a device index past any number names the device, not stoul",
          "[apps][cli][robust]") {
  const CliResult r = run_vkf("devices --self-check --device 999999999999999999999");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("no Vulkan device matches '999999999999999999999'"));
  CHECK_THAT(r.err, !Catch::Contains("stoul"));
}
