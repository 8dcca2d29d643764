#pragma once
// Small pieces several subcommands share: durations on the command line, opening the device,
// and turning Ctrl-C into a request to stop cleanly.
#include <atomic>
#include <memory>
#include <string>

#include "engine/device.h"

namespace vkf::app {

// "90", "90s", "15m", "2h", "1h30m" -> seconds. Throws vkf::Error on anything else.
double parse_duration(const std::string& text);

// The device the selector names ("" = the best one), with its own instance.
std::unique_ptr<Device> open_device(const std::string& selector);

// The first SIGINT/SIGTERM sets the flag (the run finishes its step and writes a checkpoint);
// a second one ends the process at once.
const std::atomic<bool>& install_stop_handler();

}  // namespace vkf::app
