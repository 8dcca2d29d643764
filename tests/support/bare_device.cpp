#include "tests/support/bare_device.h"

#include "tests/support/vk_test.h"

namespace vkf::test {

BareDevice::BareDevice() {
  const DeviceInfo& info = device().info();
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = info.compute_queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  REQUIRE(vkCreateDevice(info.physical, &di, nullptr, &handle_) == VK_SUCCESS);
  VkQueue queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(handle_, info.compute_queue_family, 0, &queue);
  dev_ = Device::adopt(Instance::adopt(instance()->get()), info.physical, handle_, queue,
                       info.compute_queue_family, {.pipeline_cache_dir = ""});
}

BareDevice::~BareDevice() {
  dev_.reset();  // the engine's objects go before the device they were made on
  vkDestroyDevice(handle_, nullptr);
}

}  // namespace vkf::test
