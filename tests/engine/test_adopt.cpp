#include <algorithm>

#include "engine/ops/basic.h"
#include "tests/support/vk_test.h"

using namespace vkf;

// A host application (a game, say) owns the instance, device and queue; the engine borrows them.
VKF_TEST_CASE("the engine adopts a host-owned device and leaves it alive", "[engine][adopt]") {
  auto instance = test::instance();
  auto infos = query_all_devices(instance->physical_devices());
  const DeviceInfo info = select_device(infos, "");
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = info.compute_queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkDevice host_device = VK_NULL_HANDLE;
  REQUIRE(vkCreateDevice(info.physical, &di, nullptr, &host_device) == VK_SUCCESS);
  VkQueue host_queue = VK_NULL_HANDLE;
  vkGetDeviceQueue(host_device, info.compute_queue_family, 0, &host_queue);

  auto borrowed = Instance::adopt(instance->get());
  {
    auto dev = Device::adopt(borrowed, info.physical, host_device, host_queue,
                             info.compute_queue_family, {.pipeline_cache_dir = ""});
    CHECK(dev->handle() == host_device);
    Buffer b = dev->allocate(400, "b");
    Recorder rec(*dev);
    ops::fill(*dev, rec, b, 100, 9.0f);
    rec.finish().run();
    CHECK(dev->download<float>(b, 100)[99] == 9.0f);
  }
  borrowed.reset();
  // Still alive and usable by the host: the engine destroyed none of its objects.
  CHECK(vkDeviceWaitIdle(host_device) == VK_SUCCESS);
  VkFence fence = VK_NULL_HANDLE;
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  CHECK(vkCreateFence(host_device, &fi, nullptr, &fence) == VK_SUCCESS);
  vkDestroyFence(host_device, fence, nullptr);
  vkDestroyDevice(host_device, nullptr);
}

VKF_TEST_CASE("two engines in one process do not interfere", "[engine][adopt]") {
  auto i1 = std::make_shared<Instance>(InstanceOptions{.validation = false});
  auto d1 = Device::create(i1, {.pipeline_cache_dir = ""});
  auto d2 = test::new_device();
  Buffer b1 = d1->allocate(8, "b1"), b2 = d2->allocate(8, "b2");
  d1->upload(b1, std::vector<float>{1, 2});
  d2->upload(b2, std::vector<float>{3, 4});
  CHECK(d1->download<float>(b1, 2)[1] == 2.0f);
  CHECK(d2->download<float>(b2, 2)[1] == 4.0f);
}

// Vulkan uses a device at no higher version than its instance's. A 1.3 kernel (the coopmat2
// matmul's SPIR-V 1.6) chosen for a 1.3 device under a 1.2 instance would be invalid.
VKF_TEST_CASE("a device is used at no higher Vulkan version than its instance's",
              "[engine][adopt]") {
  auto instance = test::instance();
  CHECK(instance->api_version() >= VK_API_VERSION_1_2);
  const DeviceInfo info = select_device(query_all_devices(instance->physical_devices()), "");
  for (uint32_t host_version : {VK_API_VERSION_1_2, VK_API_VERSION_1_3}) {
    Device dev(Instance::adopt(instance->get(), host_version), info, {.pipeline_cache_dir = ""});
    CAPTURE(host_version, info.api_version);
    CHECK(dev.info().api_version == std::min(info.api_version, host_version));
  }
  CHECK_THROWS_WITH(Instance::adopt(instance->get(), VK_API_VERSION_1_1),
                    Catch::Contains("Vulkan 1.2 or later"));
}
