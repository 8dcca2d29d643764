#include "engine/error.h"

#include <cstdio>

namespace vkf {

const char* result_name(VkResult result) {
  switch (result) {
#define VKF_CASE(x) \
  case x:           \
    return #x;
    VKF_CASE(VK_SUCCESS)
    VKF_CASE(VK_NOT_READY)
    VKF_CASE(VK_TIMEOUT)
    VKF_CASE(VK_EVENT_SET)
    VKF_CASE(VK_EVENT_RESET)
    VKF_CASE(VK_INCOMPLETE)
    VKF_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKF_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKF_CASE(VK_ERROR_INITIALIZATION_FAILED)
    VKF_CASE(VK_ERROR_DEVICE_LOST)
    VKF_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    VKF_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    VKF_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKF_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    VKF_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKF_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    VKF_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKF_CASE(VK_ERROR_FRAGMENTED_POOL)
    VKF_CASE(VK_ERROR_UNKNOWN)
    VKF_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    VKF_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VKF_CASE(VK_ERROR_FRAGMENTATION)
    VKF_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKF_CASE
    default:
      return "VK_ERROR_(unrecognised)";
  }
}

void check(VkResult result, const std::string& what) {
  if (result == VK_SUCCESS || result == VK_INCOMPLETE) return;
  std::string msg = what + " failed: " + result_name(result);
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw OutOfMemoryError(msg);
  if (result == VK_ERROR_DEVICE_LOST)
    throw DeviceLostError(msg + " (the GPU reset or the driver gave up on it; restart the run)");
  throw Error(msg);
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / double(1ull << 20));
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.2f KiB", double(bytes) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace vkf
