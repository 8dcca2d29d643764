#pragma once
// A device profile as tests/profiles/*.json states it, and how it rewrites what the driver
// reports. Every rewrite only restricts: a limit becomes the stricter of the driver's and the
// profile's, a feature or subgroup operation stays on only where both have it, an extension is
// listed only where both list it. Where the profile claims more than the driver, the driver's
// value stays and the clamp is recorded (Profile::notes) so that the layer can say so.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace vkf::profile_layer {

struct Profile {
  std::string name;
  // VkPhysicalDeviceLimits fields by name (maxComputeSharedMemorySize, ...); the array limits
  // (maxComputeWorkGroupSize, ...) hold three values.
  std::map<std::string, std::vector<double>> limits;
  std::map<std::string, bool> features;  // any feature of Vulkan 1.0-1.3 by its member name
  std::optional<std::set<std::string>> extensions;  // absent: the driver's list
  // Properties the device reports as its own.
  std::optional<std::string> device_name, driver_name, driver_info;
  std::optional<uint32_t> vendor_id, device_id, api_version;
  std::optional<VkPhysicalDeviceType> device_type;
  // VkPhysicalDeviceSubgroupProperties / Vulkan11Properties.
  std::optional<uint32_t> subgroup_operations;  // VkSubgroupFeatureFlags, intersected
  std::optional<uint32_t> subgroup_stages;      // VkShaderStageFlags, intersected
  // maxMemoryAllocationSize (Maintenance3), maxBufferSize (Maintenance4).
  std::optional<uint64_t> max_memory_allocation_size, max_buffer_size;
  // Memory: each heap at most this many bytes; with single_heap_host_visible, every type is
  // host-visible and coherent as on a unified-memory device (only where the driver's are).
  std::optional<uint64_t> max_heap_bytes;
  // Queues: at most this many families and queues per family; timestamp bits cleared.
  std::optional<uint32_t> max_queue_families, max_queues_per_family;
  std::optional<uint32_t> timestamp_valid_bits;

  mutable std::vector<std::string> notes;  // each clamp where the profile claimed more
};

// Reads `path`; throws std::runtime_error naming the file and the field on bad input.
Profile load_profile(const std::string& path);

void apply_properties(const Profile& p, VkPhysicalDeviceProperties& props);
// Walks a VkPhysicalDeviceProperties2 pNext chain.
void apply_properties_chain(const Profile& p, void* pnext);
void apply_features(const Profile& p, VkPhysicalDeviceFeatures& f);
void apply_features_chain(const Profile& p, void* pnext);
void apply_memory(const Profile& p, VkPhysicalDeviceMemoryProperties& m);
void apply_queue_family(const Profile& p, VkQueueFamilyProperties& q);
bool extension_allowed(const Profile& p, const char* name);
// What a vkCreateDevice asks for that the profile leaves out ("extension VK_...", "feature
// shaderFloat16"), or "": a real device without it would refuse the call.
std::string refused_request(const Profile& p, const VkDeviceCreateInfo& info);

}  // namespace vkf::profile_layer
