#pragma once
// A timeline semaphore owned by the engine: a submission signals a value (SubmitSync::signal),
// the host's own queue submissions wait for it on the device, and the host can poll or wait for
// it without a fence. Needs the timelineSemaphore feature: enabled on devices the engine creates,
// declared by the host for adopted ones (DeviceOptions::adopted.timeline_semaphore).
#include <vulkan/vulkan.h>

#include <cstdint>

#include "engine/sync.h"

namespace vkf {

class Device;

class Timeline {
 public:
  explicit Timeline(Device& device, uint64_t initial = 0);
  // Destroy it only once the submissions that signal or wait for it have finished (as Vulkan
  // requires of any semaphore).
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  VkSemaphore handle() const { return semaphore_; }
  // The value the device has reached (non-blocking).
  uint64_t completed() const;
  // Blocks until `value` is reached, within the device's timeout (then throws vkf::Error).
  void wait(uint64_t value) const;
  // What a submission signals to reach `value` (or waits for, as a SemaphoreOp).
  SemaphoreOp at(uint64_t value) const { return {semaphore_, value}; }

 private:
  Device& device_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
};

}  // namespace vkf
