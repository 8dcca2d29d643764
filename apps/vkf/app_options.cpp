#include "apps/vkf/app_options.h"

#include <csignal>
#include <cstdlib>
#include <regex>

#include "apps/tool_env/tool_env.h"
#include "engine/error.h"
#include "engine/instance.h"

namespace vkf::app {

double parse_duration(const std::string& text) {
  static const std::regex pattern(R"((?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?)");
  std::smatch m;
  if (text.empty() || !std::regex_match(text, m, pattern))
    throw Error("'" + text + "' is not a duration (examples: 90, 90s, 15m, 2h, 1h30m)");
  double seconds = 0;
  if (m[1].matched) seconds += 3600.0 * std::stod(m[1]);
  if (m[2].matched) seconds += 60.0 * std::stod(m[2]);
  if (m[3].matched) seconds += std::stod(m[3]);
  return seconds;
}

std::unique_ptr<Device> open_device(const std::string& selector) {
  auto instance = std::make_shared<Instance>(tool::instance_options());
  return Device::create(instance, tool::device_options({.selector = selector}));
}

namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) {
  if (g_stop.exchange(true)) std::_Exit(130);  // second signal: leave now
}
}  // namespace

const std::atomic<bool>& install_stop_handler() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  return g_stop;
}

}  // namespace vkf::app
