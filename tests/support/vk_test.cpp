#define CATCH_CONFIG_RUNNER
#include "tests/support/vk_test.h"

#include <execinfo.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>

#include "apps/tool_env/tool_env.h"
#include "reference/comparison.h"
#include "reference/stored.h"

namespace vkf::test {

// The shared instance and device live until main() releases them (release_shared), not until
// static destruction: by then a layer or driver may have torn down state of its own that was
// set up after them (NVIDIA's driver under the validation layer crashed there).
namespace {
std::shared_ptr<Instance> g_instance;
std::unique_ptr<Device> g_device;

void release_shared() {
  g_device.reset();
  g_instance.reset();
}
}  // namespace

std::shared_ptr<Instance> instance() {
  if (!g_instance) g_instance = std::make_shared<Instance>(tool::instance_options());
  return g_instance;
}

static DeviceOptions test_options(DeviceOptions o) {
  if (const char* sel = std::getenv("VKF_TEST_DEVICE")) o.selector = sel;
  return tool::device_options(o);
}

Device& device() {
  if (!g_device) g_device = Device::create(instance(), test_options({}));
  return *g_device;
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
  return ref::uniform(rng, n, lo, hi);
}

double tolerance_ratio(const std::vector<float>& got, const std::vector<double>& want, double atol,
                       double rtol) {
  REQUIRE(got.size() == want.size());
  ref::Comparison c("output");
  c.add_all(got, want, atol, rtol);
  return c.worst();
}

}  // namespace vkf::test

namespace {

// The sanitizers install their own handlers for fatal signals, and report better.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool k_sanitized = true;
#elif defined(__has_feature)
constexpr bool k_sanitized = __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
constexpr bool k_sanitized = false;
#endif

// A crash names itself and where it happened, before the default action ends the process: a test
// program that dies after Catch's summary (in a driver's exit handlers, say) otherwise leaves
// only an exit status. Async-signal-safe calls only (strsignal is not; backtrace is primed in
// main so that it loads nothing here).
void report_fatal_signal(int sig) {
  const char* name = sig == SIGSEGV   ? "SIGSEGV"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGILL  ? "SIGILL"
                     : sig == SIGABRT ? "SIGABRT"
                                      : "another signal";
  const char head[] = "\nvkf tests: fatal signal: ";
  (void)!write(STDERR_FILENO, head, sizeof head - 1);
  (void)!write(STDERR_FILENO, name, std::strlen(name));
  (void)!write(STDERR_FILENO, "\n", 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

// The tests keep their pipeline and shader caches in the build tree (VKF_CACHE_DIR, unless set),
// and run the CPU driver as the vkf command does (engine/cpu_driver.h): both set before any
// instance exists, whichever test comes first. Commands the tests start inherit them, and
// VKF_TUNE=off: a `vkf train` in a test neither tunes nor reads a tuning file unless the test
// asks (--tune). The shared device and instance are released before main returns.
int main(int argc, char** argv) {
  if (!k_sanitized) {
    void* prime[1];
    backtrace(prime, 1);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      std::signal(sig, report_fatal_signal);
  }
  setenv("VKF_CACHE_DIR", VKF_BINARY_DIR "/test-cache", 0);
  setenv("VKF_TUNE", "off", 0);
  vkf::tool::configure_cpu_driver();
  const int failures = Catch::Session().run(argc, argv);
  vkf::test::release_shared();
  return failures;
}
