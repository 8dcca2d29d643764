#include "engine/queue_choice.h"

#include "engine/error.h"

namespace vkf {

uint32_t choose_queue_family(std::span<const VkQueueFamilyProperties> families,
                             QueueChoice choice) {
  int first_compute = -1, universal = -1, dedicated = -1;
  for (uint32_t i = 0; i < families.size(); ++i) {
    const VkQueueFamilyProperties& f = families[i];
    if (!(f.queueFlags & VK_QUEUE_COMPUTE_BIT) || f.queueCount == 0) continue;
    if (first_compute < 0) first_compute = int(i);
    if (f.queueFlags & VK_QUEUE_GRAPHICS_BIT) {
      if (universal < 0) universal = int(i);
    } else if (dedicated < 0 ||
               (families[size_t(dedicated)].timestampValidBits == 0 && f.timestampValidBits)) {
      // The profiler and per-frame GPU times need timestamps: a family with them wins.
      dedicated = int(i);
    }
  }
  if (first_compute < 0) throw Error("the device has no queue family with compute");
  if (choice == QueueChoice::dedicated_compute && dedicated >= 0) return uint32_t(dedicated);
  return uint32_t(universal >= 0 ? universal : first_compute);
}

}  // namespace vkf
