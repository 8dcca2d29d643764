#pragma once
// A device profile (the JSON format of tests/profiles/*.json, docs/profiles.md) applied to a
// DeviceInfo: "would this run on a Mali-G710?" answered from the engine's own choices, without
// the device. Only restricts, as the profile's devices can do no more than this one: each limit
// becomes the stricter of the two, a feature, subgroup operation or extension stays only where
// both have it. Nothing here touches Vulkan; `vkf devices --profile FILE` prints the result.
#include <string>
#include <vector>

#include "engine/device_info.h"

namespace vkf {

struct ProfileApplied {
  std::string name;                 // the profile's "name"
  std::vector<std::string> clamps;  // where the profile claims more than the device has
};

// Reads `path` and restricts `info` to it. Throws Error naming the file and the field on a
// profile that cannot be read.
ProfileApplied apply_device_profile(DeviceInfo& info, const std::string& path);

}  // namespace vkf
