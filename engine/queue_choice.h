#pragma once
// Which queue family the engine submits to. On GPUs with a compute-only family (NVIDIA, AMD:
// "async compute"), work there runs beside a game's graphics queue instead of between its
// frames' draw calls; devices with one family (lavapipe, many mobile GPUs) have no choice.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>

namespace vkf {

enum class QueueChoice {
  // A family with compute and without graphics where the device has one (preferring one with
  // timestamps), else as `universal`.
  dedicated_compute,
  // A family with graphics and compute (the universal queue) where there is one, else the first
  // family with compute.
  universal,
};

// The index of the family `choice` picks among `families` (vkGetPhysicalDeviceQueueFamilyProperties
// order). Throws vkf::Error when no family has compute.
uint32_t choose_queue_family(std::span<const VkQueueFamilyProperties> families, QueueChoice choice);

}  // namespace vkf
