// `vkf serve` end to end on loopback (tests/apps/serve_test.py drives it over HTTP): the
// LibreTranslate API and the page, an npm LibreTranslate client, a load of 64 clients, and the
// faults (slow, gone, oversized and bad clients, reloads, SIGTERM). The model is the untrained
// tiny checkpoint (no device time to make); answers are checked against `vkf translate`.
#include <catch2/catch.hpp>
#include <cstdio>

#include "tests/apps/cli_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vk_test.h"

using namespace vkf::test;

namespace {

void run_case(const std::string& name) {
  // A build without cpp-httplib has no `vkf serve` (apps/CMakeLists.txt).
  if (run_shell(k_vkf + " serve --help >/dev/null 2>&1").status != 0)
    VKF_SKIP("vkf was built without `vkf serve` (libcpp-httplib-dev is missing)");
  const std::string work = temp_dir("serve-" + name).string();
  // The npm client is installed once per build tree, as CI's set-up would.
  const std::string npm_work = std::string(VKF_BINARY_DIR) + "/serve-test";
  const CliResult r =
      run_shell("python3 " VKF_SOURCE_DIR "/tests/apps/serve_test.py " + name + " " + k_vkf + " " +
                untrained_model().string() + " " + (name == "client" ? npm_work : work) + " 2>&1");
  std::printf("%s", r.out.c_str());  // the checks, and the load's figures
  if (r.status == 77) VKF_SKIP("serve_test.py " + name + ": a tool is missing (see the output)");
  INFO(r.out);
  CHECK(r.status == 0);
}

}  // namespace

TEST_CASE("vkf serve: the LibreTranslate API, limits, metrics, log and page", "[cli][serve]") {
  run_case("api");
}

TEST_CASE("vkf serve: a LibreTranslate client from npm", "[cli][serve]") {
  run_case("client");
}

TEST_CASE("vkf serve: 64 concurrent clients, every answer as vkf translate's", "[cli][serve]") {
  run_case("load");
}

TEST_CASE("vkf serve: slow, gone and bad clients, reloads and SIGTERM under load", "[cli][serve]") {
  run_case("faults");
}
