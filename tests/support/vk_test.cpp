#define CATCH_CONFIG_RUNNER
#include "tests/support/vk_test.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include "apps/tool_env/tool_env.h"

namespace vkf::test {

std::shared_ptr<Instance> instance() {
  static std::shared_ptr<Instance> inst = std::make_shared<Instance>(tool::instance_options());
  return inst;
}

static DeviceOptions test_options(DeviceOptions o) {
  if (const char* sel = std::getenv("VKF_TEST_DEVICE")) o.selector = sel;
  return tool::device_options(o);
}

Device& device() {
  static std::unique_ptr<Device> dev = Device::create(instance(), test_options({}));
  return *dev;
}

std::unique_ptr<Device> new_device(const DeviceOptions& options) {
  return Device::create(instance(), test_options(options));
}

void require_no_validation_messages() {
  auto messages = instance()->validation_log().take();
  for (const auto& m : messages) UNSCOPED_INFO("validation: " << m);
  REQUIRE(messages.empty());
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

double tolerance_ratio(const std::vector<float>& got, const std::vector<double>& want, double atol,
                       double rtol) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    double r = std::fabs(double(got[i]) - want[i]) / (atol + rtol * std::fabs(want[i]));
    worst = std::max(worst, r);
  }
  return worst;
}

}  // namespace vkf::test

// The tests keep their pipeline and shader caches in the build tree (VKF_CACHE_DIR, unless set),
// and run the CPU driver as the vkf command does (engine/cpu_driver.h): both set before any
// instance exists, whichever test comes first. Commands the tests start inherit them, and
// VKF_TUNE=off: a `vkf train` in a test neither tunes nor reads a tuning file unless the test
// asks (--tune).
int main(int argc, char** argv) {
  setenv("VKF_CACHE_DIR", VKF_BINARY_DIR "/test-cache", 0);
  setenv("VKF_TUNE", "off", 0);
  vkf::tool::configure_cpu_driver();
  return Catch::Session().run(argc, argv);
}
