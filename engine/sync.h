#pragma once
// Ordering the engine's submissions against a host application's own queue work with
// semaphores, on the device: the engine's host thread never waits on the host's queue.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

namespace vkf {

// A semaphore a submission waits for (on the device) or signals. value: the timeline value, or
// 0 for a binary semaphore. stage: for a wait, the stages of this submission that wait.
struct SemaphoreOp {
  VkSemaphore semaphore = VK_NULL_HANDLE;
  uint64_t value = 0;
  VkPipelineStageFlags stage =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
};

struct SubmitSync {
  std::vector<SemaphoreOp> wait;    // e.g. the host's upload of this frame's inputs
  std::vector<SemaphoreOp> signal;  // e.g. a Timeline value the host's next submission waits for
  bool empty() const { return wait.empty() && signal.empty(); }
};

}  // namespace vkf
