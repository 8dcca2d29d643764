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
  static std::shared_ptr<Instance> adopt(VkInstance instance);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance get() const { return instance_; }
  bool validation_enabled() const { return validation_; }
  ValidationLog& validation_log() { return log_; }
  std::vector<VkPhysicalDevice> physical_devices() const;

 private:
  struct Adopt {};
  Instance(Adopt, VkInstance instance);

  VkInstance instance_ = VK_NULL_HANDLE;
  bool owned_ = false;
  bool validation_ = false;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  ValidationLog log_;
};

}  // namespace vkf
