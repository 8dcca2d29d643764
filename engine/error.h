#pragma once
// vkf::Error: the one exception type the engine throws. Messages say what failed, on which
// device and why; only apps/ catch it, print one line and exit non-zero.
#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>

namespace vkf {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Thrown for VK_ERROR_OUT_OF_DEVICE_MEMORY / OUT_OF_HOST_MEMORY so callers can tell it apart.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// Thrown for VK_ERROR_DEVICE_LOST: the device is unusable, only a restart helps.
class DeviceLostError : public Error {
 public:
  using Error::Error;
};

const char* result_name(VkResult result);

// Throws the right Error subclass when result is not VK_SUCCESS (VK_INCOMPLETE is accepted).
void check(VkResult result, const std::string& what);

std::string format_bytes(uint64_t bytes);

}  // namespace vkf
