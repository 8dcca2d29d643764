// The inference API against the command line: vkf::Translator gives the same text as
// `vkf translate`, and vkf::Scorer the same numbers as `vkf score`, on the same checkpoint.
// Each command runs the real binary (validation on when ctest sets VKF_VALIDATION=1).
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/tool_env/tool_env.h"
#include "model/api/scorer.h"
#include "model/api/translator.h"
#include "tests/support/small_corpus.h"
#include "tests/support/tiny_model.h"

namespace fs = std::filesystem;

namespace {

const std::string k_vkf = VKF_BINARY_DIR "/apps/vkf";

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Runs vkf; returns its stdout lines, requiring exit status 0 and no validation message.
std::vector<std::string> run_vkf(const std::string& args, const fs::path& dir) {
  const std::string cmd =
      k_vkf + " " + args + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  const int status = std::system(cmd.c_str());
  std::ifstream err(dir / "err");
  std::stringstream e;
  e << err.rdbuf();
  INFO("vkf " << args << "\nstderr:\n" << e.str());
  REQUIRE(status == 0);
  CHECK(e.str().find("validation") == std::string::npos);
  return read_lines(dir / "out");
}

// The device the tests run on, made as the tests' fixtures make it.
struct TestDevice {
  TestDevice()
      : instance(std::make_shared<vkf::Instance>(vkf::tool::instance_options())),
        device(vkf::Device::create(instance, vkf::tool::device_options(selector()))) {}
  ~TestDevice() {
    const auto messages = instance->validation_log().take();
    for (const auto& m : messages) UNSCOPED_INFO("validation: " << m);
    CHECK(messages.empty());
  }
  static vkf::DeviceOptions selector() {
    vkf::DeviceOptions o;
    if (const char* s = std::getenv("VKF_TEST_DEVICE")) o.selector = s;
    return o;
  }
  std::shared_ptr<vkf::Instance> instance;
  std::unique_ptr<vkf::Device> device;
};

}  // namespace

TEST_CASE("vkf::Translator translates as `vkf translate` does", "[apps][embed]") {
  const auto& tm = vkf::test::tiny_model();
  const fs::path dir = vkf::test::temp_dir("embed-translate");
  {
    std::ofstream in(dir / "in.txt");
    for (const auto& s : tm.sentences) in << s << "\n";
  }
  TestDevice td;
  for (uint32_t beam : {1u, 4u}) {
    const auto cli = run_vkf("translate --model " + tm.dir.string() + " --input " +
                                 (dir / "in.txt").string() + " --beam " + std::to_string(beam),
                             dir);
    vkf::Translator tr(*td.device, tm.dir.string(), {.beam = beam});
    const auto api = tr.translate(tm.sentences);
    REQUIRE(cli.size() == api.size());
    for (size_t i = 0; i < api.size(); ++i)
      CHECK(cli[i] == (api[i].nbest.empty() ? "" : api[i].nbest[0].text));
  }
}

TEST_CASE("vkf::Scorer scores as `vkf score` does", "[apps][embed]") {
  const auto& tm = vkf::test::tiny_model();
  const fs::path dir = vkf::test::temp_dir("embed-score");
  const std::vector<std::string> src = {"the house is small.", "we see a river."};
  const std::vector<std::string> tgt = {"das Haus ist klein.", "wir sehen einen Fluss."};
  {
    std::ofstream s(dir / "src"), t(dir / "tgt");
    for (size_t i = 0; i < src.size(); ++i) {
      s << src[i] << "\n";
      t << tgt[i] << "\n";
    }
  }
  const auto cli = run_vkf("score --model " + tm.dir.string() + " --src " + (dir / "src").string() +
                               " --tgt " + (dir / "tgt").string(),
                           dir);
  TestDevice td;
  vkf::Scorer scorer(*td.device, tm.dir.string());
  const auto api = scorer.score(src, tgt);
  REQUIRE(cli.size() == api.size());
  for (size_t i = 0; i < api.size(); ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "%.6f\t%lld", api[i].logprob,
                  static_cast<long long>(api[i].tokens));
    CHECK(cli[i] == line);
  }
}
