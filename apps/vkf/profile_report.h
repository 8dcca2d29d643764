#pragma once
// `vkf devices --profile FILE`: a device restricted to a device profile (engine/device_profile.h)
// and what the engine would choose and refuse on it.
#include <string>

#include "engine/device_info.h"

namespace vkf::app {

// The profile's name, where it claims more than `info` has, the restricted device's table and
// the engine's choices for a base model's shapes; refusals say what is missing.
std::string profile_report(DeviceInfo info, const std::string& profile_path);

}  // namespace vkf::app
