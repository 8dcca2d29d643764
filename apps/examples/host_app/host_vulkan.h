#pragma once
// The host application's own Vulkan objects, made the way a game makes them: its instance
// (with the validation layer when asked, and its own message counter), a device with
// timeline semaphores, a queue for its frames and a compute queue for vkformer (a dedicated
// compute family where the device has one; lavapipe has one family with one queue, which the
// two then share), and the command buffers of its own "frame" work.
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace host {

struct Vulkan {
  explicit Vulkan(bool validation);
  ~Vulkan();
  Vulkan(const Vulkan&) = delete;
  Vulkan& operator=(const Vulkan&) = delete;

  // Records and submits, on the frame queue, a copy of `bytes` from src to dst that waits on
  // the device for `timeline` to reach `value`, then waits for it (a frame reading what vkformer
  // computed).
  void copy_after(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
                  VkDeviceSize bytes, VkSemaphore timeline, uint64_t value);

  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t frame_family = 0, compute_family = 0;
  VkQueue frame_queue = VK_NULL_HANDLE, compute_queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::atomic<uint32_t> validation_messages{0};
};

}  // namespace host
