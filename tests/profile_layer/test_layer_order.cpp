// Proves where VK_LAYER_VKF_profile must sit: below the validation layer, which then enforces
// the profile. The program enables the layers itself, in the order given (the engine enables
// validation, then InstanceOptions::layers / VKF_LAYERS). One compute pipeline
// (big_shared.comp: 24 KiB shared memory, 256 invocations, 5 storage buffers), which lavapipe
// itself accepts, is checked against the 16 KiB / 128-invocation / 4-buffer profile that
// VKF_PROFILE names:
//   below  validation, then the profile: the application sees the profile, and validation
//          reports each of the three limits;
//   above  the profile, then validation: the application still sees the profile, but validation
//          (below it) checks against lavapipe's limits and reports nothing: the order matters;
//   none   validation alone: lavapipe's limits, nothing reported.
// (VK_INSTANCE_LAYERS and VK_LOADER_LAYERS_ENABLE put the profile after the application's
// validation in the loader's list too, yet with the loader of Debian 12 (1.3.239) validation
// then read lavapipe's limits; enabling both from the application works.)
#include <vulkan/vulkan.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

const uint32_t k_spirv[] = {
#include "big_shared.inc"
};

std::vector<std::string> g_messages;

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT type,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  // The loader's notice that VK_INSTANCE_LAYERS added layers is general, not validation.
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT &&
      (type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT))
    g_messages.emplace_back(data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

bool check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) std::fprintf(stderr, "test_layer_order: %s failed (%d)\n", what, int(r));
  return r == VK_SUCCESS;
}

bool any_mentions(const char* text) {
  for (const auto& m : g_messages)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "below" && mode != "above" && mode != "none") {
    std::fprintf(stderr, "usage: test_layer_order below|above|none\n");
    return 2;
  }
  const bool expect_profile = mode != "none";
  const bool expect_errors = mode == "below";
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  const char* validation = "VK_LAYER_KHRONOS_validation";
  const char* profile_layer = "VK_LAYER_VKF_profile";
  std::vector<const char*> layers;
  if (mode == "above") layers.push_back(profile_layer);
  layers.push_back(validation);
  if (mode == "below") layers.push_back(profile_layer);
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType =
      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
  messenger.pfnUserCallback = on_message;
  VkInstanceCreateInfo ii{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pNext = &messenger;  // messages during vkCreateInstance and vkDestroyInstance too
  ii.pApplicationInfo = &app;
  ii.enabledLayerCount = uint32_t(layers.size());
  ii.ppEnabledLayerNames = layers.data();
  ii.enabledExtensionCount = 1;
  ii.ppEnabledExtensionNames = extensions;
  VkInstance instance;
  if (!check(vkCreateInstance(&ii, nullptr, &instance), "vkCreateInstance")) return 1;
  // The pNext messenger covers instance creation only: this one the rest.
  auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
  VkDebugUtilsMessengerEXT messenger_handle;
  if (!check(create_messenger(instance, &messenger, nullptr, &messenger_handle), "messenger"))
    return 1;
  uint32_t n = 1;
  VkPhysicalDevice pd;
  if (vkEnumeratePhysicalDevices(instance, &n, &pd) < 0 || n == 0) return 1;
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  std::printf(
      "device %s: maxComputeSharedMemorySize %u, maxComputeWorkGroupInvocations %u, "
      "maxPerStageDescriptorStorageBuffers %u\n",
      props.deviceName, props.limits.maxComputeSharedMemorySize,
      props.limits.maxComputeWorkGroupInvocations,
      props.limits.maxPerStageDescriptorStorageBuffers);

  uint32_t family = 0;  // lavapipe's one family computes
  float priority = 1;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkDevice device;
  if (!check(vkCreateDevice(pd, &di, nullptr, &device), "vkCreateDevice")) return 1;

  VkDescriptorSetLayoutBinding bindings[5];
  for (uint32_t b = 0; b < 5; ++b)
    bindings[b] = {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = 5;
  li.pBindings = bindings;
  VkDescriptorSetLayout set_layout;
  if (!check(vkCreateDescriptorSetLayout(device, &li, nullptr, &set_layout), "set layout"))
    return 1;
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout;
  VkPipelineLayout layout;
  if (!check(vkCreatePipelineLayout(device, &pli, nullptr, &layout), "pipeline layout")) return 1;
  VkShaderModuleCreateInfo si{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  si.codeSize = sizeof k_spirv;
  si.pCode = k_spirv;
  VkShaderModule module;
  if (!check(vkCreateShaderModule(device, &si, nullptr, &module), "shader module")) return 1;
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  // Validation reports the misfit; lavapipe itself builds the pipeline either way.
  vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &ci, nullptr, &pipeline);
  if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
  vkDestroyShaderModule(device, module, nullptr);
  vkDestroyPipelineLayout(device, layout, nullptr);
  vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
  vkDestroyDevice(device, nullptr);

  // A device asking for an extension or a feature the profile leaves out, both of which
  // lavapipe itself has (VK_KHR_shader_float16_int8, shaderFloat16): with the profile in the
  // chain (above or below validation) vkCreateDevice fails as the profiled device's driver
  // would, with VK_ERROR_EXTENSION_NOT_PRESENT and VK_ERROR_FEATURE_NOT_PRESENT; without it,
  // lavapipe creates both.
  const char* float16 = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
  VkDeviceCreateInfo with_extension = di;
  with_extension.enabledExtensionCount = 1;
  with_extension.ppEnabledExtensionNames = &float16;
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  v12.shaderFloat16 = VK_TRUE;
  VkDeviceCreateInfo with_feature = di;
  with_feature.pNext = &v12;
  bool requests_ok = true;
  for (const auto& [request, refused] : {std::pair{&with_extension, VK_ERROR_EXTENSION_NOT_PRESENT},
                                         std::pair{&with_feature, VK_ERROR_FEATURE_NOT_PRESENT}}) {
    VkDevice asking = VK_NULL_HANDLE;
    const VkResult r = vkCreateDevice(pd, request, nullptr, &asking);
    if (r == VK_SUCCESS) vkDestroyDevice(asking, nullptr);
    const VkResult want = expect_profile ? refused : VK_SUCCESS;
    if (r != want) {
      std::printf("FAIL: vkCreateDevice asking for what the profile leaves out gave %d, not %d\n",
                  int(r), int(want));
      requests_ok = false;
    }
  }
  destroy_messenger(instance, messenger_handle, nullptr);
  vkDestroyInstance(instance, nullptr);

  for (const auto& m : g_messages) std::printf("validation: %s\n", m.c_str());
  // Through the validation layer the application must see the profile's limits (or, without
  // the profile, lavapipe's own: 32 KiB, 1024 invocations, 32 buffers).
  const bool profile_seen = props.limits.maxComputeSharedMemorySize == 16384 &&
                            props.limits.maxComputeWorkGroupInvocations == 128 &&
                            props.limits.maxPerStageDescriptorStorageBuffers == 4;
  if (profile_seen != expect_profile) {
    std::printf("FAIL: the limits seen are%s the profile's\n", profile_seen ? "" : " not");
    return 1;
  }
  if (!requests_ok) return 1;
  if (!expect_errors) {
    if (!g_messages.empty()) std::printf("FAIL: validation messages in mode %s\n", mode.c_str());
    return g_messages.empty() ? 0 : 1;
  }
  bool ok = true;
  for (const char* limit : {"maxComputeSharedMemorySize", "maxComputeWorkGroupInvocations",
                            "maxPerStageDescriptorStorageBuffers"}) {
    if (!any_mentions(limit)) {
      std::printf("FAIL: no validation message names %s\n", limit);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}