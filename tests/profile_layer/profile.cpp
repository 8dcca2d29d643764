#include "tests/profile_layer/profile.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/vk_coopmat_khr.h"

namespace vkf::profile_layer {
namespace {

using nlohmann::json;

// How a limit restricts: a maximum is lowered, an alignment (or granularity) raised, a flag
// cleared.
enum class Kind { max_u32, max_u64, max_size, max_u32x3, align_u64, align_size, flag };

struct LimitField {
  const char* name;
  size_t offset;
  Kind kind;
};

#define VKF_LIMIT(field, kind) \
  { #field, offsetof(VkPhysicalDeviceLimits, field), Kind::kind }
// The limits a compute engine meets; a profile naming any other is refused (load_profile).
const LimitField k_limits[] = {
    VKF_LIMIT(maxComputeSharedMemorySize, max_u32),
    VKF_LIMIT(maxComputeWorkGroupInvocations, max_u32),
    VKF_LIMIT(maxComputeWorkGroupSize, max_u32x3),
    VKF_LIMIT(maxComputeWorkGroupCount, max_u32x3),
    VKF_LIMIT(maxStorageBufferRange, max_u32),
    VKF_LIMIT(maxUniformBufferRange, max_u32),
    VKF_LIMIT(maxPushConstantsSize, max_u32),
    VKF_LIMIT(maxMemoryAllocationCount, max_u32),
    VKF_LIMIT(maxBoundDescriptorSets, max_u32),
    VKF_LIMIT(maxPerStageDescriptorStorageBuffers, max_u32),
    VKF_LIMIT(maxPerStageDescriptorUniformBuffers, max_u32),
    VKF_LIMIT(maxPerStageDescriptorSampledImages, max_u32),
    VKF_LIMIT(maxPerStageDescriptorStorageImages, max_u32),
    VKF_LIMIT(maxPerStageResources, max_u32),
    VKF_LIMIT(maxDescriptorSetStorageBuffers, max_u32),
    VKF_LIMIT(maxDescriptorSetStorageBuffersDynamic, max_u32),
    VKF_LIMIT(maxDescriptorSetUniformBuffers, max_u32),
    VKF_LIMIT(maxDescriptorSetUniformBuffersDynamic, max_u32),
    VKF_LIMIT(maxDescriptorSetSampledImages, max_u32),
    VKF_LIMIT(maxDescriptorSetStorageImages, max_u32),
    VKF_LIMIT(maxTexelBufferElements, max_u32),
    VKF_LIMIT(maxImageDimension1D, max_u32),
    VKF_LIMIT(maxImageDimension2D, max_u32),
    VKF_LIMIT(maxImageDimension3D, max_u32),
    VKF_LIMIT(maxSamplerAllocationCount, max_u32),
    VKF_LIMIT(sparseAddressSpaceSize, max_u64),
    VKF_LIMIT(minStorageBufferOffsetAlignment, align_u64),
    VKF_LIMIT(minUniformBufferOffsetAlignment, align_u64),
    VKF_LIMIT(minTexelBufferOffsetAlignment, align_u64),
    VKF_LIMIT(nonCoherentAtomSize, align_u64),
    VKF_LIMIT(bufferImageGranularity, align_u64),
    VKF_LIMIT(optimalBufferCopyOffsetAlignment, align_u64),
    VKF_LIMIT(minMemoryMapAlignment, align_size),
    VKF_LIMIT(timestampComputeAndGraphics, flag),
};
#undef VKF_LIMIT

const LimitField* find_limit(const std::string& name) {
  for (const auto& f : k_limits)
    if (name == f.name) return &f;
  return nullptr;
}

// Each feature a profile may turn off, by member name, wherever the driver's chain carries it:
// (structure type, offset in that structure). A name can live in several structures (the
// Vulkan 1.1/1.2/1.3 aggregates and the extension structures they absorbed).
struct FeatureField {
  const char* name;
  VkStructureType type;  // 0: VkPhysicalDeviceFeatures itself
  size_t offset;
};

#define VKF_F10(field) \
  { #field, VkStructureType(0), offsetof(VkPhysicalDeviceFeatures, field) }
#define VKF_F(field, stype, s) \
  { #field, stype, offsetof(s, field) }
const FeatureField k_features[] = {
    VKF_F10(robustBufferAccess),
    VKF_F10(shaderFloat64),
    VKF_F10(shaderInt64),
    VKF_F10(shaderInt16),
    VKF_F10(shaderStorageBufferArrayDynamicIndexing),
    VKF_F10(fragmentStoresAndAtomics),
    VKF_F10(vertexPipelineStoresAndAtomics),
    VKF_F10(pipelineStatisticsQuery),
    VKF_F(storageBuffer16BitAccess, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
          VkPhysicalDeviceVulkan11Features),
    VKF_F(uniformAndStorageBuffer16BitAccess, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
          VkPhysicalDeviceVulkan11Features),
    VKF_F(storagePushConstant16, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
          VkPhysicalDeviceVulkan11Features),
    VKF_F(variablePointers, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
          VkPhysicalDeviceVulkan11Features),
    VKF_F(variablePointersStorageBuffer, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
          VkPhysicalDeviceVulkan11Features),
    VKF_F(storageBuffer16BitAccess, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
          VkPhysicalDevice16BitStorageFeatures),
    VKF_F(uniformAndStorageBuffer16BitAccess,
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
          VkPhysicalDevice16BitStorageFeatures),
    VKF_F(storagePushConstant16, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
          VkPhysicalDevice16BitStorageFeatures),
    VKF_F(shaderFloat16, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(shaderInt8, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(storageBuffer8BitAccess, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(uniformAndStorageBuffer8BitAccess, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(shaderBufferInt64Atomics, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(timelineSemaphore, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(bufferDeviceAddress, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(vulkanMemoryModel, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(vulkanMemoryModelDeviceScope, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
          VkPhysicalDeviceVulkan12Features),
    VKF_F(shaderFloat16, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
          VkPhysicalDeviceShaderFloat16Int8Features),
    VKF_F(shaderInt8, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
          VkPhysicalDeviceShaderFloat16Int8Features),
    VKF_F(storageBuffer8BitAccess, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
          VkPhysicalDevice8BitStorageFeatures),
    VKF_F(timelineSemaphore, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
          VkPhysicalDeviceTimelineSemaphoreFeatures),
    VKF_F(vulkanMemoryModel, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
          VkPhysicalDeviceVulkanMemoryModelFeatures),
    VKF_F(vulkanMemoryModelDeviceScope,
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
          VkPhysicalDeviceVulkanMemoryModelFeatures),
    VKF_F(subgroupSizeControl, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
          VkPhysicalDeviceVulkan13Features),
    VKF_F(computeFullSubgroups, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
          VkPhysicalDeviceVulkan13Features),
    VKF_F(maintenance4, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
          VkPhysicalDeviceVulkan13Features),
    VKF_F(subgroupSizeControl, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
          VkPhysicalDeviceSubgroupSizeControlFeatures),
    VKF_F(computeFullSubgroups, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
          VkPhysicalDeviceSubgroupSizeControlFeatures),
    VKF_F(maintenance4, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
          VkPhysicalDeviceMaintenance4Features),
    VKF_F(cooperativeMatrix, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
          VkPhysicalDeviceCooperativeMatrixFeaturesKHR),
    VKF_F(cooperativeMatrix, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
          VkPhysicalDeviceCooperativeMatrixFeaturesNV),
};
#undef VKF_F
#undef VKF_F10

bool known_feature(const std::string& name) {
  return std::any_of(std::begin(k_features), std::end(k_features),
                     [&](const FeatureField& f) { return name == f.name; });
}

uint32_t subgroup_bit(const std::string& op) {
  static const std::pair<const char*, uint32_t> ops[] = {
      {"basic", VK_SUBGROUP_FEATURE_BASIC_BIT},
      {"vote", VK_SUBGROUP_FEATURE_VOTE_BIT},
      {"arithmetic", VK_SUBGROUP_FEATURE_ARITHMETIC_BIT},
      {"ballot", VK_SUBGROUP_FEATURE_BALLOT_BIT},
      {"shuffle", VK_SUBGROUP_FEATURE_SHUFFLE_BIT},
      {"shuffle_relative", VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT},
      {"clustered", VK_SUBGROUP_FEATURE_CLUSTERED_BIT},
      {"quad", VK_SUBGROUP_FEATURE_QUAD_BIT}};
  for (const auto& [name, bit] : ops)
    if (op == name) return bit;
  throw std::runtime_error("unknown subgroup operation \"" + op + "\"");
}

VkPhysicalDeviceType device_type(const std::string& t) {
  if (t == "discrete") return VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  if (t == "integrated") return VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  if (t == "virtual") return VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
  if (t == "cpu") return VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (t == "other") return VK_PHYSICAL_DEVICE_TYPE_OTHER;
  throw std::runtime_error(
      "deviceType must be discrete, integrated, virtual, cpu or other, not \"" + t + "\"");
}

uint32_t parse_version(const std::string& v) {
  unsigned major = 0, minor = 0, patch = 0;
  if (std::sscanf(v.c_str(), "%u.%u.%u", &major, &minor, &patch) < 2)
    throw std::runtime_error("apiVersion \"" + v + "\" is not MAJOR.MINOR[.PATCH]");
  return VK_MAKE_API_VERSION(0, major, minor, patch);
}

// The stricter of the driver's value and the profile's, noting where the profile asked for more.
template <typename T>
T stricter(const Profile& p, const char* what, T driver, T wanted, bool is_max) {
  const bool looser = is_max ? wanted > driver : wanted < driver;
  if (looser) {
    p.notes.push_back(std::string(what) + ": the profile says " + std::to_string(wanted) +
                      ", the driver has " + std::to_string(driver) + "; keeping the driver's");
    return driver;
  }
  return wanted;
}

void apply_limit(const Profile& p, const LimitField& f, const std::vector<double>& v,
                 VkPhysicalDeviceLimits& limits) {
  auto* base = reinterpret_cast<unsigned char*>(&limits) + f.offset;
  switch (f.kind) {
    case Kind::max_u32: {
      auto* x = reinterpret_cast<uint32_t*>(base);
      *x = stricter(p, f.name, *x, uint32_t(v[0]), true);
      break;
    }
    case Kind::max_u32x3:
      for (int i = 0; i < 3; ++i) {
        auto* x = reinterpret_cast<uint32_t*>(base) + i;
        *x = stricter(p, f.name, *x, uint32_t(v[i]), true);
      }
      break;
    case Kind::max_u64: {
      auto* x = reinterpret_cast<uint64_t*>(base);
      *x = stricter(p, f.name, *x, uint64_t(v[0]), true);
      break;
    }
    case Kind::max_size: {
      auto* x = reinterpret_cast<size_t*>(base);
      *x = stricter(p, f.name, *x, size_t(v[0]), true);
      break;
    }
    case Kind::align_u64: {
      auto* x = reinterpret_cast<uint64_t*>(base);
      *x = stricter(p, f.name, *x, uint64_t(v[0]), false);
      break;
    }
    case Kind::align_size: {
      auto* x = reinterpret_cast<size_t*>(base);
      *x = stricter(p, f.name, *x, size_t(v[0]), false);
      break;
    }
    case Kind::flag: {
      auto* x = reinterpret_cast<VkBool32*>(base);
      if (v[0] == 0) *x = VK_FALSE;
      break;
    }
  }
}

void apply_feature_struct(const Profile& p, VkStructureType type, void* s) {
  for (const auto& f : k_features) {
    if (f.type != type) continue;
    auto it = p.features.find(f.name);
    if (it == p.features.end()) continue;
    auto* x = reinterpret_cast<VkBool32*>(static_cast<unsigned char*>(s) + f.offset);
    if (!it->second) *x = VK_FALSE;  // true keeps the driver's: the layer never adds a feature
  }
}

void apply_subgroup(const Profile& p, VkSubgroupFeatureFlags& ops, VkShaderStageFlags& stages) {
  if (p.subgroup_operations) ops &= *p.subgroup_operations;
  if (p.subgroup_stages) stages &= *p.subgroup_stages;
}

// A section of the profile; an absent one is empty (the driver's values stand).
const json& section(const json& j, const char* key) {
  static const json empty = json::object();
  auto it = j.find(key);
  return it == j.end() ? empty : *it;
}

}  // namespace

Profile load_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  json j;
  try {
    j = json::parse(in, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  Profile p;
  try {
    p.name = j.at("name").get<std::string>();
    for (const auto& [key, value] : section(j, "limits").items()) {
      const LimitField* f = find_limit(key);
      if (!f) throw std::runtime_error("limits." + key + " is not a limit this layer applies");
      std::vector<double> v;
      if (value.is_boolean())
        v = {value.get<bool>() ? 1.0 : 0.0};  // timestampComputeAndGraphics
      else if (value.is_array())
        v = value.get<std::vector<double>>();
      else
        v = {value.get<double>()};
      if (v.size() != (f->kind == Kind::max_u32x3 ? 3u : 1u))
        throw std::runtime_error("limits." + key + " has the wrong number of values");
      p.limits[key] = v;
    }
    for (const auto& [key, value] : section(j, "features").items()) {
      if (!known_feature(key))
        throw std::runtime_error("features." + key + " is not a feature this layer applies");
      p.features[key] = value.get<bool>();
    }
    if (j.contains("extensions")) p.extensions = j["extensions"].get<std::set<std::string>>();
    const json& props = section(j, "properties");
    if (props.contains("deviceName")) p.device_name = props["deviceName"].get<std::string>();
    if (props.contains("driverName")) p.driver_name = props["driverName"].get<std::string>();
    if (props.contains("driverInfo")) p.driver_info = props["driverInfo"].get<std::string>();
    if (props.contains("vendorID")) p.vendor_id = props["vendorID"].get<uint32_t>();
    if (props.contains("deviceID")) p.device_id = props["deviceID"].get<uint32_t>();
    if (props.contains("deviceType"))
      p.device_type = device_type(props["deviceType"].get<std::string>());
    if (props.contains("apiVersion"))
      p.api_version = parse_version(props["apiVersion"].get<std::string>());
    if (props.contains("maxMemoryAllocationSize"))
      p.max_memory_allocation_size = props["maxMemoryAllocationSize"].get<uint64_t>();
    if (props.contains("maxBufferSize")) p.max_buffer_size = props["maxBufferSize"].get<uint64_t>();
    const json& sg = section(j, "subgroup");
    if (sg.contains("supportedOperations")) {
      uint32_t bits = 0;
      for (const auto& op : sg["supportedOperations"]) bits |= subgroup_bit(op.get<std::string>());
      p.subgroup_operations = bits;
    }
    if (sg.contains("computeStage") && !sg["computeStage"].get<bool>())
      p.subgroup_stages = ~uint32_t(VK_SHADER_STAGE_COMPUTE_BIT);
    const json& mem = section(j, "memory");
    if (mem.contains("maxHeapBytes")) p.max_heap_bytes = mem["maxHeapBytes"].get<uint64_t>();
    const json& q = section(j, "queues");
    if (q.contains("maxFamilies")) p.max_queue_families = q["maxFamilies"].get<uint32_t>();
    if (q.contains("maxQueuesPerFamily"))
      p.max_queues_per_family = q["maxQueuesPerFamily"].get<uint32_t>();
    if (q.contains("timestampValidBits"))
      p.timestamp_valid_bits = q["timestampValidBits"].get<uint32_t>();
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return p;
}

void apply_properties(const Profile& p, VkPhysicalDeviceProperties& props) {
  for (const auto& [name, v] : p.limits) apply_limit(p, *find_limit(name), v, props.limits);
  if (p.device_name) {
    std::snprintf(props.deviceName, sizeof props.deviceName, "%s", p.device_name->c_str());
  }
  if (p.vendor_id) props.vendorID = *p.vendor_id;
  if (p.device_id) props.deviceID = *p.device_id;
  if (p.device_type) props.deviceType = *p.device_type;
  if (p.api_version)
    props.apiVersion = stricter(p, "apiVersion", props.apiVersion, *p.api_version, true);
}

void apply_properties_chain(const Profile& p, void* pnext) {
  for (auto* s = static_cast<VkBaseOutStructure*>(pnext); s; s = s->pNext) {
    switch (s->sType) {
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceSubgroupProperties*>(s);
        apply_subgroup(p, x->supportedOperations, x->supportedStages);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceVulkan11Properties*>(s);
        apply_subgroup(p, x->subgroupSupportedOperations, x->subgroupSupportedStages);
        if (p.max_memory_allocation_size)
          x->maxMemoryAllocationSize =
              stricter(p, "maxMemoryAllocationSize", x->maxMemoryAllocationSize,
                       VkDeviceSize(*p.max_memory_allocation_size), true);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceMaintenance3Properties*>(s);
        if (p.max_memory_allocation_size)
          x->maxMemoryAllocationSize =
              stricter(p, "maxMemoryAllocationSize", x->maxMemoryAllocationSize,
                       VkDeviceSize(*p.max_memory_allocation_size), true);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceMaintenance4Properties*>(s);
        if (p.max_buffer_size)
          x->maxBufferSize = stricter(p, "maxBufferSize", x->maxBufferSize,
                                      VkDeviceSize(*p.max_buffer_size), true);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceVulkan13Properties*>(s);
        if (p.max_buffer_size)
          x->maxBufferSize = stricter(p, "maxBufferSize", x->maxBufferSize,
                                      VkDeviceSize(*p.max_buffer_size), true);
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceDriverProperties*>(s);
        if (p.driver_name)
          std::snprintf(x->driverName, sizeof x->driverName, "%s", p.driver_name->c_str());
        if (p.driver_info)
          std::snprintf(x->driverInfo, sizeof x->driverInfo, "%s", p.driver_info->c_str());
        break;
      }
      case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES: {
        auto* x = reinterpret_cast<VkPhysicalDeviceVulkan12Properties*>(s);
        if (p.driver_name)
          std::snprintf(x->driverName, sizeof x->driverName, "%s", p.driver_name->c_str());
        if (p.driver_info)
          std::snprintf(x->driverInfo, sizeof x->driverInfo, "%s", p.driver_info->c_str());
        break;
      }
      default:
        break;
    }
  }
}

void apply_features(const Profile& p, VkPhysicalDeviceFeatures& f) {
  apply_feature_struct(p, VkStructureType(0), &f);
}

void apply_features_chain(const Profile& p, void* pnext) {
  for (auto* s = static_cast<VkBaseOutStructure*>(pnext); s; s = s->pNext)
    apply_feature_struct(p, s->sType, s);
}

void apply_memory(const Profile& p, VkPhysicalDeviceMemoryProperties& m) {
  if (!p.max_heap_bytes) return;
  for (uint32_t i = 0; i < m.memoryHeapCount; ++i)
    m.memoryHeaps[i].size = std::min<VkDeviceSize>(m.memoryHeaps[i].size, *p.max_heap_bytes);
}

void apply_queue_family(const Profile& p, VkQueueFamilyProperties& q) {
  if (p.max_queues_per_family) q.queueCount = std::min(q.queueCount, *p.max_queues_per_family);
  if (p.timestamp_valid_bits)
    q.timestampValidBits = std::min(q.timestampValidBits, *p.timestamp_valid_bits);
}

bool extension_allowed(const Profile& p, const char* name) {
  return !p.extensions || p.extensions->count(name) != 0;
}

std::string refused_request(const Profile& p, const VkDeviceCreateInfo& info) {
  for (uint32_t i = 0; i < info.enabledExtensionCount; ++i)
    if (!extension_allowed(p, info.ppEnabledExtensionNames[i]))
      return std::string("extension ") + info.ppEnabledExtensionNames[i];
  auto on = [](const void* s, size_t offset) {
    return *reinterpret_cast<const VkBool32*>(static_cast<const char*>(s) + offset) == VK_TRUE;
  };
  for (const FeatureField& f : k_features) {
    const auto it = p.features.find(f.name);
    if (it == p.features.end() || it->second) continue;  // the profile leaves it as it is
    bool asked = false;
    if (f.type == VkStructureType(0) && info.pEnabledFeatures)
      asked = on(info.pEnabledFeatures, f.offset);
    for (auto* s = static_cast<const VkBaseInStructure*>(info.pNext); s && !asked; s = s->pNext) {
      if (f.type == VkStructureType(0) && s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2)
        asked = on(&reinterpret_cast<const VkPhysicalDeviceFeatures2*>(s)->features, f.offset);
      else if (f.type != VkStructureType(0) && s->sType == f.type)
        asked = on(s, f.offset);
    }
    if (asked) return std::string("feature ") + f.name;
  }
  return "";
}

}  // namespace vkf::profile_layer
