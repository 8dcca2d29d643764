#pragma once
// Who measured: the device's fingerprint (what `vkf devices --json` says about it, plus the
// limits the kernels are tuned by) and the host's (CPU, OS, the environment variables that
// change results), so that a result file says what it was measured on.
#include <nlohmann/json.hpp>
#include <string>

#include "engine/device_info.h"

namespace vkf::bench {

nlohmann::json device_fingerprint(const DeviceInfo& info);
// Short and unique enough for a table column: "llvmpipe (LLVM 15.0.6, 256 bits), Mesa 22.3.6".
std::string device_label(const DeviceInfo& info);
nlohmann::json host_description();

}  // namespace vkf::bench
