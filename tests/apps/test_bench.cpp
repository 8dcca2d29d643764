// vkf bench (apps/vkf/bench, apps/vkf/cmd_bench.cpp): the result file's schema and round trip, the
// quick suite on the test device with every row checked, a deliberately wrong kernel (the
// --wrong-kernel test hook) that must FAIL with a non-zero exit, and `compare` on files from
// two devices (lavapipe at two vector widths, and two logical devices in one file). The HTML
// page in a browser is tests/apps/bench_html_in_chromium.py (a ctest of its own).
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/vkf/bench/compare.h"
#include "apps/vkf/bench/report.h"
#include "engine/error.h"
#include "tests/support/small_corpus.h"

namespace fs = std::filesystem;
using vkf::test::temp_dir;
using namespace vkf::bench;

namespace {

const std::string k_vkf = VKF_BINARY_DIR "/apps/vkf";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int status = -1;
  std::string out, err;
};

// Runs `env_prefix vkf args`, stdout and stderr captured; any validation message fails.
Result run_vkf(const std::string& args, const std::string& env_prefix = "") {
  static int counter = 0;
  const fs::path dir = temp_dir("bench-run-" + std::to_string(counter++));
  const std::string cmd = env_prefix + " " + k_vkf + " " + args + " </dev/null >" +
                          (dir / "out").string() + " 2>" + (dir / "err").string();
  const int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  INFO("vkf " << args << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.err.find("validation") == std::string::npos);
  return r;
}

Row row(const std::string& id, Check check, double rate) {
  Row r;
  r.id = id;
  r.group = id.substr(0, id.find('/'));
  r.title = "title of " + id;
  r.check = check;
  if (check != Check::skip) {
    r.timer = "host";
    r.times_ms = {2.0, 1.0, 3.0};
    r.time_ms = 2.0;
    r.rate = rate;
    r.unit = "GFLOP/s";
    r.peak_fraction = 0.5;
    r.peak_basis = "fp32 FMA";
    r.check_detail = "sampled";
  }
  if (check != Check::pass) r.reason = check == Check::skip ? "no such feature" : "wrong result";
  return r;
}

Report sample_report(const std::string& name, double rate) {
  Report r;
  r.vkf_version = "0.1.0";
  r.suite = "quick";
  r.repeat = 3;
  r.created = "2026-01-01T00:00:00Z";
  r.host = {{"cpu", "some CPU"}, {"logical_cores", 2}};
  DeviceReport d;
  d.label = name;
  d.fingerprint = {{"name", name},
                   {"vendor", "mesa"},
                   {"driver_name", "llvmpipe"},
                   {"driver_version", "1"},
                   {"api_version", "1.3.0"}};
  d.peak.fp32_gflops = 100;
  d.peak.copy_gbytes_s = 10;
  d.rows = {row("peak/fp32_fma", Check::pass, 100), row("matmul/f32/8x8x8/AB", Check::pass, rate),
            row("matmul/coopmat:x/8x8x8/AB", Check::skip, 0)};
  d.seconds = 1.5;
  r.devices.push_back(d);
  return r;
}

}  // namespace

TEST_CASE("bench result files: JSON round trip and schema errors", "[apps][bench]") {
  const Report a = sample_report("device A", 50);
  const nlohmann::json j = to_json(a);
  CHECK(j.at("schema") == k_schema);
  CHECK(j.at("devices").at(0).at("peak").at("fp16_fma_gflops").is_null());
  CHECK(j.at("devices").at(0).at("peak").at("coopmat_gflops").is_null());
  const Report back = report_from_json(j, "sample");
  CHECK(to_json(back) == j);
  // A tensor-core peak survives the round trip; files from before it existed still read.
  Report with_coopmat = a;
  with_coopmat.devices.at(0).peak.coopmat_gflops = 565000.0;
  CHECK(report_from_json(to_json(with_coopmat), "sample").devices.at(0).peak.coopmat_gflops ==
        565000.0);
  nlohmann::json older = j;
  older["devices"][0]["peak"].erase("coopmat_gflops");
  CHECK(!report_from_json(older, "older").devices.at(0).peak.coopmat_gflops);
  CHECK(back.devices.at(0).rows.at(2).check == Check::skip);
  CHECK(back.devices.at(0).rows.at(2).reason == "no such feature");

  auto rejects = [&](nlohmann::json bad, const std::string& message) {
    INFO(message);
    REQUIRE_THROWS_WITH(report_from_json(bad, "bad.json"), Catch::Contains(message));
  };
  nlohmann::json bad = j;
  bad["schema"] = "vkf-bench/0";
  rejects(bad, "schema 'vkf-bench/0'");
  bad = j;
  bad["devices"][0]["rows"][1].erase("rate");
  rejects(bad, "missing field 'rate'");
  bad = j;
  bad["devices"][0]["rows"][1]["times_ms"] = "fast";
  rejects(bad, "field 'times_ms' has the wrong type");
  bad = j;
  bad["devices"][0]["rows"][1]["check"] = "MAYBE";
  rejects(bad, "MAYBE");
  bad = j;
  bad["devices"][0]["rows"][2]["reason"] = "";
  rejects(bad, "needs a reason");
  bad = j;
  bad["devices"][0]["rows"][1]["check"] = "FAIL";  // 'failed' still says 0
  bad["devices"][0]["rows"][1]["reason"] = "wrong";
  rejects(bad, "'failed' does not count");
  bad = j;
  bad["devices"][0]["fingerprint"].erase("driver_version");
  rejects(bad, "missing field 'driver_version'");
  rejects(nlohmann::json::array(), "not a vkf bench result");

  // Joined on the row ids, ratios to the first file; the HTML carries one bar a measured cell.
  const std::vector<NamedReport> files = {{"a.json", a}, {"b.json", sample_report("device B", 75)}};
  const Joined joined = join(files);
  REQUIRE(joined.columns.size() == 2);
  REQUIRE(joined.lines.size() == 3);
  CHECK(Joined::ratio(joined.lines[1], 1) == Approx(1.5));
  CHECK(Joined::ratio(joined.lines[2], 1) == 0);  // skipped in both
  const std::string md = compare_markdown(joined);
  CHECK(md.find("| title of matmul/f32/8x8x8/AB | GFLOP/s | 50 | 75 (1.50x) |") !=
        std::string::npos);
  CHECK(md.find("skipped") != std::string::npos);
  const std::string html = compare_html(joined);
  size_t bars = 0;
  for (size_t p = html.find("<rect"); p != std::string::npos; p = html.find("<rect", p + 1)) ++bars;
  CHECK(bars == 4);  // peak and matmul rows on both devices; the skipped row has none
  CHECK(html.find("http") == html.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

TEST_CASE("vkf bench --suite quick: every row checked, a valid result file", "[apps][bench]") {
  const fs::path dir = temp_dir("bench-quick");
  const Result r =
      run_vkf("bench --suite quick --repeat 2 --json " + (dir / "quick.json").string());
  REQUIRE(r.status == 0);
  const Report rep = read_report((dir / "quick.json").string());
  CHECK(rep.suite == "quick");
  REQUIRE(rep.devices.size() == 1);
  const DeviceReport& d = rep.devices[0];
  CHECK(d.peak.fp32_gflops > 0);
  CHECK(d.peak.copy_gbytes_s > 0);
  CHECK(d.fingerprint.contains("subgroup_size"));
  int passed = 0;
  for (const Row& row : d.rows) {
    INFO(row.id << ": " << row.reason);
    CHECK(row.check != Check::fail);
    if (row.check == Check::pass) {
      ++passed;
      CHECK(row.times_ms.size() >= 1);
      CHECK(row.rate > 0);
      CHECK(!row.check_detail.empty());
    }
  }
  // The peaks, matmul, attention both ways, LayerNorm both ways, cross-entropy, Adam, a training
  // step and a decoder step at least.
  CHECK(passed >= 13);
  CHECK(r.out.find("PASS  ") != std::string::npos);  // the table on stdout
  for (const char* id : {"peak/fp32_fma", "peak/copy", "attention/backward/64x64",
                         "train/tiny/1024", "decode/tiny", "adam/4194304"}) {
    INFO(id);
    CHECK(std::any_of(d.rows.begin(), d.rows.end(),
                      [&](const Row& x) { return x.id == id && x.check == Check::pass; }));
  }
  CHECK(r.err.find("[1/") != std::string::npos);  // progress on stderr
}

TEST_CASE("vkf bench: a wrong kernel FAILs its check and the exit status says so",
          "[apps][bench]") {
  const fs::path dir = temp_dir("bench-wrong");
  const fs::path json = dir / "wrong.json";
  // Every kind of row's hook at once (the peaks always run): each must catch its corrupted
  // output. The suite's other matmul rows take the same path as the one kept here.
  const Result r = run_vkf(
      "bench --suite quick --repeat 1 --wrong-kernel . --json " + json.string() +
      " --rows 'matmul/f32/1024x1024x1024|attention|layer_norm|cross_entropy|adam|train|decode'");
  CHECK(r.status == 2);
  CHECK(r.err.find("FAILED their check") != std::string::npos);
  const Report rep = read_report(json.string());
  int failed = 0;
  for (const Row& row : rep.devices.at(0).rows) {
    INFO(row.id << ": " << row.check_detail);
    if (row.check == Check::skip) continue;
    CHECK(row.check == Check::fail);
    CHECK(row.reason.find("wrong result") == 0);
    ++failed;
  }
  // 4 peaks, matmul, attention x 2, LayerNorm x 2, cross-entropy, Adam, training, decoding; only
  // the fp16 peak (a device without shaderFloat16) and the tensor-core peak (no
  // VK_KHR_cooperative_matrix, as on Debian 12's lavapipe) may be skipped.
  CHECK(rep.devices.at(0).rows.size() == 13);
  CHECK(failed >= 11);
  CHECK(rep.failed() == failed);
  // The same rows without the hook pass (so the FAILs above are the hook's doing).
  const Result ok = run_vkf("bench --repeat 1 --rows 'matmul/f32/1024x1024x1024/ABt'");
  CHECK(ok.status == 0);
}

TEST_CASE("vkf bench compare: two devices side by side, as a table and as a page",
          "[apps][bench]") {
  const fs::path dir = temp_dir("bench-compare");
  const std::string rows = " --repeat 1 --rows 'matmul/f32/1024x1024x1024/ABt'";
  // Two logical devices on the default physical device, one file.
  Result r = run_vkf("bench --device 0,0" + rows + " --json " + (dir / "two.json").string());
  REQUIRE(r.status == 0);
  CHECK(read_report((dir / "two.json").string()).devices.size() == 2);
  std::vector<std::string> files = {(dir / "two.json").string()};
  // lavapipe at two vector widths (subgroups of 8 and 16), where the machine has it.
  if (run_vkf("devices").out.find("llvmpipe") != std::string::npos) {
    for (const char* w : {"256", "512"}) {
      const fs::path f = dir / (std::string("lavapipe-") + w + ".json");
      r = run_vkf("bench --device cpu" + rows + " --json " + f.string(),
                  std::string("LP_NATIVE_VECTOR_WIDTH=") + w);
      REQUIRE(r.status == 0);
      CHECK(read_report(f.string()).devices.at(0).label.find(std::string(w) + " bits") !=
            std::string::npos);
      files.push_back(f.string());
    }
  }
  std::string args = "bench compare";
  for (const std::string& f : files) args += " " + f;
  r = run_vkf(args + " --html " + (dir / "page.html").string());
  REQUIRE(r.status == 0);
  const size_t columns = files.size() == 1 ? 2 : 4;
  CHECK(r.out.find("[" + std::to_string(columns) + "]") != std::string::npos);
  CHECK(r.out.find("matmul f32 1024x1024x1024 A B^T") != std::string::npos);
  CHECK(r.out.find("x) |") != std::string::npos);  // a ratio to the first column
  const std::string page = slurp(dir / "page.html");
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("#ff7f0e") != std::string::npos);  // the second device's bars

  // A file that is not a result: a clear error, exit 1.
  std::ofstream(dir / "other.json") << R"({"schema": "something else"})";
  r = run_vkf("bench compare " + (dir / "other.json").string());
  CHECK(r.status == 1);
  CHECK(r.err.find("other.json: schema 'something else'") != std::string::npos);
  r = run_vkf("bench --suite huge");
  CHECK(r.status == 1);
  CHECK(r.err.find("unknown suite 'huge'") != std::string::npos);
}
