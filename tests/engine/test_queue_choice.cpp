// Queue families: the engine's choice (a dedicated compute family where the device has one), and
// adoption of a host-owned device on a family other than the default one.
#include <vector>

#include "engine/ops/basic.h"
#include "engine/timeline.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

VkQueueFamilyProperties family(VkQueueFlags flags, uint32_t timestamp_bits = 64,
                               uint32_t count = 1) {
  VkQueueFamilyProperties f{};
  f.queueFlags = flags;
  f.queueCount = count;
  f.timestampValidBits = timestamp_bits;
  return f;
}

constexpr VkQueueFlags G = VK_QUEUE_GRAPHICS_BIT, C = VK_QUEUE_COMPUTE_BIT,
                       T = VK_QUEUE_TRANSFER_BIT;

// A device the host creates itself on `queue_family`, with timeline semaphores when asked.
struct HostDevice {
  HostDevice(const DeviceInfo& info, uint32_t queue_family, bool timeline) {
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = queue_family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &priority;
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = timeline;
    VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    di.pNext = &f12;
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    REQUIRE(vkCreateDevice(info.physical, &di, nullptr, &device) == VK_SUCCESS);
    vkGetDeviceQueue(device, queue_family, 0, &queue);
  }
  ~HostDevice() { vkDestroyDevice(device, nullptr); }
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
};

}  // namespace

TEST_CASE("queue family choice", "[engine][queue]") {
  // NVIDIA-like: universal, transfer-only, compute-only.
  const std::vector<VkQueueFamilyProperties> nvidia = {family(G | C | T, 64, 16), family(T, 64, 2),
                                                       family(C | T, 64, 8)};
  CHECK(choose_queue_family(nvidia, QueueChoice::dedicated_compute) == 2);
  CHECK(choose_queue_family(nvidia, QueueChoice::universal) == 0);
  // A compute family with timestamps wins over one without.
  const std::vector<VkQueueFamilyProperties> two = {family(G | C), family(C, 0), family(C, 36)};
  CHECK(choose_queue_family(two, QueueChoice::dedicated_compute) == 2);
  // One family (lavapipe, many mobile GPUs): no choice.
  const std::vector<VkQueueFamilyProperties> one = {family(G | C | T)};
  CHECK(choose_queue_family(one, QueueChoice::dedicated_compute) == 0);
  CHECK(choose_queue_family(one, QueueChoice::universal) == 0);
  // Compute only, no graphics anywhere: the first compute family either way.
  const std::vector<VkQueueFamilyProperties> headless = {family(T), family(C | T), family(C)};
  CHECK(choose_queue_family(headless, QueueChoice::universal) == 1);
  CHECK(choose_queue_family(headless, QueueChoice::dedicated_compute) == 1);
  // Families with no queues do not count; no compute at all is an error.
  CHECK(choose_queue_family(std::vector{family(C, 64, 0), family(G | C)},
                            QueueChoice::dedicated_compute) == 1);
  CHECK_THROWS_WITH(choose_queue_family(std::vector{family(T)}, QueueChoice::universal),
                    Catch::Contains("no queue family with compute"));
}

VKF_TEST_CASE("a device the engine creates uses the family it chose", "[engine][queue]") {
  Device& dev = test::device();
  const auto& families = dev.info().queue_families;
  REQUIRE_FALSE(families.empty());
  CHECK(dev.info().compute_queue_family ==
        choose_queue_family(families, QueueChoice::dedicated_compute));
  auto universal = test::new_device({.queue = QueueChoice::universal});
  CHECK(universal->info().compute_queue_family ==
        choose_queue_family(families, QueueChoice::universal));
  CHECK_THROWS_WITH(test::new_device({.queue_family = uint32_t(families.size())}),
                    Catch::Contains("does not exist or has no compute"));
}

VKF_TEST_CASE("the engine adopts a host device on a non-default queue family", "[engine][adopt]") {
  auto instance = test::instance();
  const DeviceInfo& info = test::device().info();
  const uint32_t usual = choose_queue_family(info.queue_families, QueueChoice::universal);
  int other = -1;
  for (uint32_t i = 0; i < info.queue_families.size(); ++i)
    if (i != usual && (info.queue_families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
        info.queue_families[i].queueCount > 0)
      other = int(i);
  if (other < 0)
    VKF_SKIP(info.name << " has " << info.queue_families.size()
                       << " queue family with compute, so no non-default one");
  HostDevice host(info, uint32_t(other), false);
  auto dev = Device::adopt(Instance::adopt(instance->get()), info.physical, host.device, host.queue,
                           uint32_t(other));
  CHECK(dev->info().compute_queue_family == uint32_t(other));
  Buffer b = dev->allocate(4000, "b");
  Recorder rec(*dev);
  ops::fill(*dev, rec, b, 1000, -1.5f);
  rec.finish().run();
  CHECK(dev->download<float>(b, 1000)[999] == -1.5f);
}

VKF_TEST_CASE("an adopted device uses timeline semaphores only when the host enabled them",
              "[engine][adopt]") {
  auto instance = test::instance();
  const DeviceInfo& info = test::device().info();
  const uint32_t fam = info.compute_queue_family;
  {
    HostDevice host(info, fam, true);
    auto dev = Device::adopt(Instance::adopt(instance->get()), info.physical, host.device,
                             host.queue, fam, {.adopted = {.timeline_semaphore = true}});
    Timeline timeline(*dev);
    Buffer b = dev->allocate(400, "b");
    Recorder rec(*dev);
    ops::fill(*dev, rec, b, 100, 4.0f);
    Sequence seq = rec.finish();
    seq.submit({.signal = {timeline.at(5)}});
    timeline.wait(5);
    CHECK(timeline.completed() == 5);
    seq.wait();
  }
  HostDevice host(info, fam, false);
  auto dev =
      Device::adopt(Instance::adopt(instance->get()), info.physical, host.device, host.queue, fam);
  CHECK_FALSE(dev->timeline_semaphores());
  CHECK_THROWS_WITH(Timeline(*dev), Catch::Contains("timeline semaphores are not enabled"));
  CHECK_THROWS_WITH(
      Device::adopt(Instance::adopt(instance->get()), info.physical, host.device, host.queue, 99),
      Catch::Contains("does not exist"));
}
