#include "engine/instance.h"

#include <cstdio>
#include <cstring>
#include <utility>

#include "engine/cpu_driver.h"
#include "engine/error.h"

namespace vkf {
namespace {

constexpr const char* k_validation_layer = "VK_LAYER_KHRONOS_validation";

bool layer_available(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

// An instance extension of the loader and drivers (layer nullptr) or of one layer.
bool extension_available(const char* name, const char* layer = nullptr) {
  uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(layer, &count, nullptr);
  std::vector<VkExtensionProperties> exts(count);
  vkEnumerateInstanceExtensionProperties(layer, &count, exts.data());
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// VK_EXT_layer_settings as the Vulkan registry defines it (extension 497), spelled out because
// Debian 12's headers (1.3.239) predate it; used only where the validation layer lists it.
constexpr const char* k_layer_settings_extension = "VK_EXT_layer_settings";
constexpr auto k_layer_settings_create_info = static_cast<VkStructureType>(1000496000);
struct LayerSetting {
  const char* layer_name;
  const char* setting_name;
  uint32_t type;  // VkLayerSettingTypeEXT: 0 = VK_LAYER_SETTING_TYPE_BOOL32_EXT
  uint32_t value_count;
  const void* values;
};
struct LayerSettingsCreateInfo {
  VkStructureType s_type;
  const void* next;
  uint32_t setting_count;
  const LayerSetting* settings;
};

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  // Only warnings and errors count; info and verbose (e.g. the validation cache file) are noise.
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    auto* log = static_cast<ValidationLog*>(user);
    std::string level =
        severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
    const char* text = data->pMessage ? data->pMessage : "(no message)";
    // Layers up to 1.3 began the message with its id ("[ SYNC-HAZARD-... ]"); 1.4's leave it
    // to pMessageIdName, which is what tests and readers search for.
    const char* id = data->pMessageIdName;
    std::string message = level + ": ";
    if (id && *id && !std::strstr(text, id)) message += std::string("[") + id + "] ";
    log->add(message + text);
  }
  return VK_FALSE;
}

// Vulkan 1.2 is what the engine needs; 1.3 where the loader has it, since SPIR-V 1.6 (which
// GL_NV_cooperative_matrix2 requires: shaders/matmul_coopmat_nv2.comp) needs a device used at
// 1.3. A device below 1.3 is still used at its own version.
uint32_t api_version_to_request() {
  uint32_t loader = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion(&loader) != VK_SUCCESS) loader = VK_API_VERSION_1_0;
  return loader >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
}

}  // namespace

void ValidationLog::add(std::string message) {
  std::lock_guard lock(mutex_);
  messages_.push_back(std::move(message));
}

size_t ValidationLog::count() const {
  std::lock_guard lock(mutex_);
  return messages_.size();
}

std::vector<std::string> ValidationLog::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(messages_, {});
}

Instance::Instance(const InstanceOptions& options) : owned_(true) {
  check_cpu_driver_environment();  // before the driver reads it
  validation_ = options.validation;
  if (validation_ && !layer_available(k_validation_layer))
    throw Error(std::string("validation was requested but ") + k_validation_layer +
                " is not installed (Debian: apt-get install vulkan-validationlayers)");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = options.application_name.c_str();
  app.pEngineName = "vkformer";
  api_version_ = api_version_to_request();
  app.apiVersion = api_version_;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  const bool layer_settings = validation_ && options.sync_validation &&
                              extension_available(k_layer_settings_extension, k_validation_layer);
  for (const auto& name : options.layers)
    if (!layer_available(name.c_str()))
      throw Error("layer " + name + " was requested (InstanceOptions::layers, VKF_LAYERS) but is " +
                  "not installed");
  if (validation_) {
    layers.push_back(k_validation_layer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (layer_settings) extensions.push_back(k_layer_settings_extension);
  }
  // After validation: the loader orders layers as listed, the first nearest the application.
  for (const auto& name : options.layers) layers.push_back(name.c_str());
  // Lets the loader show portability (e.g. MoltenVK) devices too.
  VkInstanceCreateFlags flags = 0;
  if (extension_available(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  VkValidationFeatureEnableEXT sync_feature =
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync_feature;
  // Newer layers check a dispatch's descriptor accesses only with syncval_shader_accesses_heuristic
  // on: with 1.4.309 (Debian 13) a dispatch reading what the one before wrote, no barrier
  // between, went unreported (tests/engine/test_recorder.cpp); 1.3.239 (Debian 12) checks them
  // always and has no VK_EXT_layer_settings.
  const uint32_t on = 1;
  const LayerSetting shader_accesses{k_validation_layer, "syncval_shader_accesses_heuristic", 0, 1,
                                     &on};
  const LayerSettingsCreateInfo settings{k_layer_settings_create_info, nullptr, 1,
                                         &shader_accesses};

  VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = on_validation_message;
  messenger_info.pUserData = &log_;

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (validation_) {
    // The messenger in pNext also catches messages from vkCreateInstance itself.
    info.pNext = &messenger_info;
    if (options.sync_validation) messenger_info.pNext = &features;
    if (layer_settings) features.pNext = &settings;
  }
  VkResult r = vkCreateInstance(&info, nullptr, &instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error(
        "no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); install one, "
        "e.g. Debian's mesa-vulkan-drivers for the CPU device lavapipe");
  check(r, "creating the Vulkan instance");

  if (validation_) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    messenger_info.pNext = nullptr;
    check(create(instance_, &messenger_info, nullptr, &messenger_),
          "creating the validation messenger");
  }
}

Instance::Instance(Adopt, VkInstance instance, uint32_t api_version)
    : instance_(instance), owned_(false), api_version_(api_version) {}

std::shared_ptr<Instance> Instance::adopt(VkInstance instance, uint32_t api_version) {
  if (instance == VK_NULL_HANDLE) throw Error("Instance::adopt: null VkInstance");
  if (api_version < VK_API_VERSION_1_2)
    throw Error("Instance::adopt: the engine needs an instance created for Vulkan 1.2 or later");
  return std::shared_ptr<Instance>(new Instance(Adopt{}, instance, api_version));
}

Instance::~Instance() {
  if (!owned_) return;
  if (messenger_ != VK_NULL_HANDLE) {
    // Messages nobody collected (an application run with validation on, not a test) are not
    // silently dropped.
    for (const auto& m : log_.take()) std::fprintf(stderr, "vkf: validation %s\n", m.c_str());
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t count = 0;
  check(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "enumerating physical devices");
  std::vector<VkPhysicalDevice> devices(count);
  check(vkEnumeratePhysicalDevices(instance_, &count, devices.data()),
        "enumerating physical devices");
  devices.resize(count);
  return devices;
}

}  // namespace vkf
