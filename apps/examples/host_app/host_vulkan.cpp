#include "host_vulkan.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace host {
namespace {

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: " + std::to_string(r));
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void* user) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    static_cast<Vulkan*>(user)->validation_messages++;
    std::fprintf(stderr, "host_app: validation: %s\n", data->pMessage);
  }
  return VK_FALSE;
}

}  // namespace

Vulkan::Vulkan(bool validation) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "host_app";
  app.apiVersion = VK_API_VERSION_1_2;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync;
  VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = on_message;
  mi.pUserData = this;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  if (validation) {
    ii.enabledLayerCount = 1;
    ii.ppEnabledLayerNames = &layer;
    ii.enabledExtensionCount = 1;
    ii.ppEnabledExtensionNames = &ext;
    ii.pNext = &mi;
    mi.pNext = &features;
  }
  check(vkCreateInstance(&ii, nullptr, &instance), "vkCreateInstance");
  if (validation) {
    mi.pNext = nullptr;
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    check(create(instance, &mi, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
  }

  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  if (n == 0) throw std::runtime_error("no Vulkan device");
  std::vector<VkPhysicalDevice> physicals(n);
  vkEnumeratePhysicalDevices(instance, &n, physicals.data());
  physical = physicals[0];

  // The frame queue: graphics and compute (a game's main queue). vkformer's queue: a compute
  // family without graphics where there is one, else a second queue of the frame family where
  // there is one, else the frame queue itself.
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &n, families.data());
  int frame = -1, compute = -1;
  for (uint32_t i = 0; i < n; ++i) {
    const VkQueueFlags f = families[i].queueFlags;
    if (frame < 0 && (f & VK_QUEUE_GRAPHICS_BIT) && (f & VK_QUEUE_COMPUTE_BIT)) frame = int(i);
    if (compute < 0 && (f & VK_QUEUE_COMPUTE_BIT) && !(f & VK_QUEUE_GRAPHICS_BIT)) compute = int(i);
  }
  if (frame < 0)
    for (uint32_t i = 0; i < n && frame < 0; ++i)
      if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) frame = int(i);
  if (frame < 0) throw std::runtime_error("no queue family with compute");
  frame_family = uint32_t(frame);
  const bool second_queue = compute < 0 && families[frame_family].queueCount > 1;
  compute_family = compute >= 0 ? uint32_t(compute) : frame_family;

  const float priorities[2] = {1.0f, 1.0f};
  VkDeviceQueueCreateInfo qi[2] = {{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO},
                                   {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}};
  qi[0].queueFamilyIndex = frame_family;
  qi[0].queueCount = second_queue ? 2 : 1;
  qi[0].pQueuePriorities = priorities;
  qi[1].queueFamilyIndex = compute_family;
  qi[1].queueCount = 1;
  qi[1].pQueuePriorities = priorities;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.timelineSemaphore = VK_TRUE;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &f12;
  di.queueCreateInfoCount = compute >= 0 ? 2 : 1;
  di.pQueueCreateInfos = qi;
  check(vkCreateDevice(physical, &di, nullptr, &device), "vkCreateDevice");
  vkGetDeviceQueue(device, frame_family, 0, &frame_queue);
  vkGetDeviceQueue(device, compute_family, second_queue ? 1 : 0, &compute_queue);

  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = frame_family;
  check(vkCreateCommandPool(device, &pi, nullptr, &pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device, &ai, &cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(device, &fi, nullptr, &fence), "vkCreateFence");
}

Vulkan::~Vulkan() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    vkDestroyFence(device, fence, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);
  }
  if (messenger != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance, messenger, nullptr);
  }
  if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
}

void Vulkan::copy_after(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst,
                        VkDeviceSize dst_offset, VkDeviceSize bytes, VkSemaphore timeline,
                        uint64_t value) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  VkBufferCopy c{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(cmd, src, dst, 1, &c);
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                       0, nullptr, 0, nullptr);
  check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ti.waitSemaphoreValueCount = 1;
  ti.pWaitSemaphoreValues = &value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &ti;
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &timeline;
  si.pWaitDstStageMask = &stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  check(vkQueueSubmit(frame_queue, 1, &si, fence), "vkQueueSubmit");
  check(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  check(vkResetFences(device, 1, &fence), "vkResetFences");
}

}  // namespace host
