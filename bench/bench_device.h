#pragma once
// The device every benchmark runs on: VKF_BENCH_DEVICE=<selector> (index, vendor, type or a part
// of the name; see `vkf devices`), else the best one. One per process, created on first use.
// VKF_BENCH_TUNING=FILE runs it with a tuning file's configurations (`vkf tune`), as `vkf train
// --tune FILE` does; unset, the static tables (what --tune off runs).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "apps/tool_env/tool_env.h"
#include "engine/engine.h"
#include "engine/tuning_file.h"

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

// Applies VKF_BENCH_TUNING to `dev`. A file that does not apply to it (another device or driver)
// ends the program: a figure labelled tuned must have run tuned.
inline void apply_bench_tuning(Device& dev) {
  const char* path = std::getenv("VKF_BENCH_TUNING");
  if (!path || !*path) return;
  try {
    const TuningLoad l = load_tuning(path, dev.info());
    if (!l.tuning) {
      std::fprintf(stderr, "benchmark: VKF_BENCH_TUNING: %s\n", l.note.c_str());
      std::exit(1);
    }
    dev.set_tuning(l.tuning);
  } catch (const Error& e) {  // missing or malformed
    std::fprintf(stderr, "benchmark: VKF_BENCH_TUNING: %s\n", e.what());
    std::exit(1);
  }
  std::fprintf(stderr, "benchmark: kernels tuned (%s)\n", path);
}

inline Device& device() {
  static std::unique_ptr<Device> dev = [] {
    try {
      auto d =
          Device::create(bench_instance(), tool::device_options({.selector = device_selector()}));
      apply_bench_tuning(*d);
      return d;
    } catch (const Error& e) {  // no device, or a selector that matches none: say so, exit 1
      std::fprintf(stderr, "benchmark: %s\n", e.what());
      std::exit(1);
    }
  }();
  return *dev;
}

}  // namespace vkf::bench
