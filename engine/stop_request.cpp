#include "engine/stop_request.h"

#include <signal.h>

namespace vkf {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

}  // namespace

void request_stop(int signal) noexcept {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
  g_stop.store(true);
}

bool stop_requested() noexcept {
  return g_stop.load(std::memory_order_relaxed);
}

int stop_signal() noexcept {
  return g_signal.load();
}

const std::atomic<bool>& stop_flag() noexcept {
  return g_stop;
}

int stop_exit_status() noexcept {
  const int sig = g_signal.load();
  if (sig == SIGHUP) return 128 + SIGTERM;
  return 128 + (sig > 0 ? sig : SIGINT);
}

void throw_if_stop_requested(const std::string& phase) {
  if (stop_requested())
    throw StopRequested(std::string("stopped by ") + signal_name(stop_signal()) + " while " +
                        phase);
}

}  // namespace vkf
