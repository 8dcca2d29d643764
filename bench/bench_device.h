#pragma once
// The device every benchmark runs on: VKF_BENCH_DEVICE=<selector> (index, vendor, type or a part
// of the name; see `vkf devices`), else the best one. One per process, created on first use.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "apps/tool_env/tool_env.h"
#include "engine/engine.h"

namespace vkf::bench {

inline std::shared_ptr<Instance> bench_instance() {
  static auto instance = [] {
    tool::configure_cpu_driver();  // as the vkf command runs it (engine/cpu_driver.h)
    return std::make_shared<Instance>(tool::instance_options());
  }();
  return instance;
}

inline const char* device_selector() {
  const char* sel = std::getenv("VKF_BENCH_DEVICE");
  return sel ? sel : "";
}

inline Device& device() {
  static std::unique_ptr<Device> dev = [] {
    try {
      return Device::create(bench_instance(),
                            tool::device_options({.selector = device_selector()}));
    } catch (const Error& e) {  // no device, or a selector that matches none: say so, exit 1
      std::fprintf(stderr, "benchmark: %s\n", e.what());
      std::exit(1);
    }
  }();
  return *dev;
}

}  // namespace vkf::bench
