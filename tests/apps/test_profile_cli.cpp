// `vkf devices --profile FILE` (issue 42): the device restricted to a profile, the engine's
// choices there and what it refuses, with no profile layer involved.
#include <catch2/catch.hpp>

#include "tests/apps/cli_support.h"

using vkf::test::run_vkf;

namespace {
const std::string k_profiles = std::string(VKF_SOURCE_DIR) + "/tests/profiles/";
}

TEST_CASE("vkf devices --profile shows the choices and refusals on a profile", "[apps][cli]") {
  auto r = run_vkf("devices --profile " + k_profiles + "vulkan_1_2_minimums.json");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("profile vulkan_1_2_minimums"));
  CHECK_THAT(r.out, Catch::Contains("shared memory 16.00 KiB, workgroup max 128"));
  CHECK_THAT(r.out, Catch::Contains("precision auto: fp32"));
  CHECK_THAT(r.out, Catch::Contains("precision fp16: refused") &&
                        Catch::Contains("storageBuffer16BitAccess"));
  CHECK_THAT(r.out, Catch::Contains("matmul f32"));
  CHECK_THAT(r.out, Catch::Contains("attention f32"));
  CHECK_THAT(r.out, Catch::Contains("4 storage buffers"));

  r = run_vkf("devices --profile " + k_profiles + "VP_ANDROID_baseline_2022.json");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("refused:") && Catch::Contains("needs Vulkan 1.2"));

  r = run_vkf("devices --profile /nonexistent/profile.json");
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("/nonexistent/profile.json"));
}
