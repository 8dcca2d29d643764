#include "engine/timeline.h"

#include "engine/device.h"
#include "engine/error.h"

namespace vkf {

Timeline::Timeline(Device& device, uint64_t initial) : device_(device) {
  if (!device.timeline_semaphores())
    throw Error("timeline semaphores are not enabled on " + device.label() +
                " (an adopted device: create it with timelineSemaphore and set "
                "DeviceOptions::adopted.timeline_semaphore)");
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = initial;
  VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  ci.pNext = &type;
  check(vkCreateSemaphore(device.handle(), &ci, nullptr, &semaphore_),
        "creating a timeline semaphore on " + device.label());
}

Timeline::~Timeline() {
  vkDestroySemaphore(device_.handle(), semaphore_, nullptr);
}

uint64_t Timeline::completed() const {
  uint64_t value = 0;
  check(vkGetSemaphoreCounterValue(device_.handle(), semaphore_, &value),
        "reading a timeline semaphore on " + device_.label());
  return value;
}

void Timeline::wait(uint64_t value) const {
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  wi.pSemaphores = &semaphore_;
  wi.pValues = &value;
  const auto timeout_ns = static_cast<uint64_t>(device_.timeout_seconds() * 1e9);
  VkResult r = vkWaitSemaphores(device_.handle(), &wi, timeout_ns);
  if (r == VK_TIMEOUT)
    throw Error("timed out waiting for timeline value " + std::to_string(value) + " on " +
                device_.label() + " (the device may be hung, or nothing signals that value)");
  check(r, "waiting for a timeline semaphore on " + device_.label());
}

}  // namespace vkf
