#pragma once
// The Vulkan instance: created by the engine (optionally with the Khronos validation layer and
// its synchronization checks) or adopted from a host application, which then keeps ownership.
#include <vulkan/vulkan.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vkf {

struct InstanceOptions {
  // Enable VK_LAYER_KHRONOS_validation (the tools map VKF_VALIDATION=1 onto it). Asking for it
  // when the layer is absent is an error.
  bool validation = false;
  // With validation: also run synchronization validation (finds missing barriers).
  bool sync_validation = true;
  std::string application_name = "vkformer";
  // More layers, enabled after validation and so nearer the driver: validation then checks the
  // engine against what such a layer makes the device report (a device-profile layer:
  // docs/profiles.md). The tools map VKF_LAYERS=NAME[:NAME...] onto it. A layer that is not
  // installed is an error.
  std::vector<std::string> layers;
};

// Warnings and errors reported by the validation layer; info-level notices are dropped.
class ValidationLog {
 public:
  void add(std::string message);
  size_t count() const;
  std::vector<std::string> take();  // returns and clears

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

class Instance {
 public:
  explicit Instance(const InstanceOptions& options = {});
  // Borrows an instance owned by the host application: it is never destroyed here.
  // `api_version` is the VkApplicationInfo::apiVersion the host created it with; the engine uses
  // no device above it (1.2, the least the engine needs, unless told).
  static std::shared_ptr<Instance> adopt(VkInstance instance,
                                         uint32_t api_version = VK_API_VERSION_1_2);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance get() const { return instance_; }
  bool validation_enabled() const { return validation_; }
  ValidationLog& validation_log() { return log_; }
  std::vector<VkPhysicalDevice> physical_devices() const;
  // The Vulkan version the instance was created for. A device is used at no higher version than
  // this, whatever it reports (Device caps DeviceInfo::api_version to it).
  uint32_t api_version() const { return api_version_; }

 private:
  struct Adopt {};
  Instance(Adopt, VkInstance instance, uint32_t api_version);

  VkInstance instance_ = VK_NULL_HANDLE;
  bool owned_ = false;
  bool validation_ = false;
  uint32_t api_version_ = VK_API_VERSION_1_2;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  ValidationLog log_;
};

}  // namespace vkf
