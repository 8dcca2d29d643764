#pragma once
// Move-only owners for Vulkan handles created from a VkDevice: destroyed exactly once, in the
// owner's reverse declaration order.
#include <vulkan/vulkan.h>

#include <utility>

namespace vkf {

template <typename H, void (*Destroy)(VkDevice, H, const VkAllocationCallbacks*)>
class Owned {
 public:
  Owned() = default;
  Owned(VkDevice device, H handle) : device_(device), handle_(handle) {}
  Owned(Owned&& o) noexcept
      : device_(o.device_), handle_(std::exchange(o.handle_, static_cast<H>(VK_NULL_HANDLE))) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      handle_ = std::exchange(o.handle_, static_cast<H>(VK_NULL_HANDLE));
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { reset(); }

  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  H get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  H handle_ = VK_NULL_HANDLE;
};

using OwnedBuffer = Owned<VkBuffer, vkDestroyBuffer>;
using OwnedMemory = Owned<VkDeviceMemory, vkFreeMemory>;
using OwnedFence = Owned<VkFence, vkDestroyFence>;
using OwnedCommandPool = Owned<VkCommandPool, vkDestroyCommandPool>;
using OwnedDescriptorPool = Owned<VkDescriptorPool, vkDestroyDescriptorPool>;
using OwnedDescriptorSetLayout = Owned<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using OwnedPipelineLayout = Owned<VkPipelineLayout, vkDestroyPipelineLayout>;
using OwnedPipeline = Owned<VkPipeline, vkDestroyPipeline>;
using OwnedShaderModule = Owned<VkShaderModule, vkDestroyShaderModule>;
using OwnedPipelineCache = Owned<VkPipelineCache, vkDestroyPipelineCache>;
using OwnedQueryPool = Owned<VkQueryPool, vkDestroyQueryPool>;
using OwnedBufferView = Owned<VkBufferView, vkDestroyBufferView>;

}  // namespace vkf
