#include "tests/support/f16_storage.h"

#include <algorithm>
#include <cstdint>

#include "tests/reference/matmul.h"  // to_half, from_half
#include "tests/support/vk_test.h"

namespace vkf::test {

bool has_storage16() {
  if (device().info().storage16) return true;
  WARN(device().label() << " has no 16-bit storage: the f16 variant is not tested");
  return false;
}

std::vector<float> stored(std::vector<float> v, DType t) {
  if (t == DType::f16)
    for (float& x : v) x = ref::round_half(x);
  return v;
}

float poison(DType t) {
  // -65504, the lowest finite f16, is no output of the tests' inputs either.
  return t == DType::f16 ? -65504.0f : k_poison;
}

Buffer upload_as(Device& dev, const std::vector<float>& v, DType t, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(v.size(), 1) * dtype_bytes(t), what);
  upload_as(dev, b, v, t);
  return b;
}

void upload_as(Device& dev, const Buffer& b, const std::vector<float>& v, DType t) {
  if (t == DType::f32) {
    dev.upload(b, v);
    return;
  }
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = ref::to_half(v[i]);
  dev.upload(b, h);
}

std::vector<float> download_as(Device& dev, const Buffer& b, size_t n, DType t) {
  if (t == DType::f32) return dev.download<float>(b, n);
  auto h = dev.download<uint16_t>(b, n);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = ref::from_half(h[i]);
  return v;
}

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
