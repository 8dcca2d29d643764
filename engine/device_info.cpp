#include "engine/device_info.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <thread>

#include "engine/error.h"
#include "engine/vk_coopmat_nv2.h"

namespace vkf {
namespace {

Vendor vendor_from_id(uint32_t id) {
  switch (id) {
    case 0x10DE:
      return Vendor::nvidia;
    case 0x1002:
      return Vendor::amd;
    case 0x8086:
      return Vendor::intel;
    case 0x13B5:
      return Vendor::arm;
    case 0x5143:
      return Vendor::qualcomm;
    case 0x106B:
      return Vendor::apple;
    case 0x1010:
      return Vendor::imgtec;
    case 0x10005:
      return Vendor::mesa;
    default:
      return Vendor::other;
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(),
                     [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// What a two-call enumeration command of a device extension lists for `physical` (the shapes
// of the cooperative-matrix extensions). The commands take a physical device, so only the
// instance's dispatch reaches them: empty without the instance, the command, or on failure.
template <typename Get, typename Props>
std::vector<Props> enumerate_listed(VkInstance instance, const char* command,
                                    VkPhysicalDevice physical, VkStructureType type) {
  if (instance == VK_NULL_HANDLE) return {};
  auto get = reinterpret_cast<Get>(vkGetInstanceProcAddr(instance, command));
  if (get == nullptr) return {};
  uint32_t n = 0;
  if (get(physical, &n, nullptr) != VK_SUCCESS || n == 0) return {};
  std::vector<Props> props(n);
  for (auto& p : props) p = Props{type};
  if (get(physical, &n, props.data()) < 0) return {};  // VK_INCOMPLETE fills the first n
  props.resize(n);
  return props;
}

// Whether VK_NV_cooperative_matrix lists the shape shaders/matmul_coopmat.comp multiplies:
// 16x16x16, fp16 A and B, fp32 C and D, subgroup scope.
bool nv_coopmat_has_f16_16x16x16(VkInstance instance, VkPhysicalDevice physical) {
  const auto shapes = enumerate_listed<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV,
                                       VkCooperativeMatrixPropertiesNV>(
      instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", physical,
      VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV);
  return std::any_of(shapes.begin(), shapes.end(), [](const VkCooperativeMatrixPropertiesNV& s) {
    return s.MSize == 16 && s.NSize == 16 && s.KSize == 16 &&
           s.AType == VK_COMPONENT_TYPE_FLOAT16_NV && s.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           s.CType == VK_COMPONENT_TYPE_FLOAT32_NV && s.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           s.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

// The shapes VK_KHR_cooperative_matrix lists.
std::vector<CoopmatShape> khr_coopmat_shapes(VkInstance instance, VkPhysicalDevice physical) {
  std::vector<CoopmatShape> out;
  for (const auto& p : enumerate_listed<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR,
                                        VkCooperativeMatrixPropertiesKHR>(
           instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", physical,
           VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR))
    out.push_back({p.MSize, p.NSize, p.KSize, uint32_t(p.AType), uint32_t(p.BType),
                   uint32_t(p.CType), uint32_t(p.ResultType), p.saturatingAccumulation != 0,
                   uint32_t(p.scope)});
  return out;
}

// The flexible-dimension shapes VK_NV_cooperative_matrix2 lists (granularities in m, n, k).
std::vector<CoopmatShape> nv_coopmat2_shapes(VkInstance instance, VkPhysicalDevice physical) {
  std::vector<CoopmatShape> out;
  for (const auto& p :
       enumerate_listed<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV,
                        VkCooperativeMatrixFlexibleDimensionsPropertiesNV>(
           instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV", physical,
           VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV))
    out.push_back({p.MGranularity, p.NGranularity, p.KGranularity, uint32_t(p.AType),
                   uint32_t(p.BType), uint32_t(p.CType), uint32_t(p.ResultType),
                   p.saturatingAccumulation != 0, uint32_t(p.scope), p.workgroupInvocations});
  return out;
}

const char* component_name(uint32_t t) {
  static const char* const names[] = {"f16", "f32", "f64", "s8",  "s16", "s32",
                                      "s64", "u8",  "u16", "u32", "u64"};
  return t < std::size(names) ? names[t] : "other";
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

}  // namespace

bool CoopmatShape::f16_f32() const {
  return a_type == VK_COMPONENT_TYPE_FLOAT16_KHR && b_type == VK_COMPONENT_TYPE_FLOAT16_KHR &&
         c_type == VK_COMPONENT_TYPE_FLOAT32_KHR && result_type == VK_COMPONENT_TYPE_FLOAT32_KHR &&
         !saturating;
}

bool CoopmatShape::f16_f32_subgroup() const {
  return f16_f32() && scope == VK_SCOPE_SUBGROUP_KHR;
}

std::string CoopmatShape::describe() const {
  std::string s = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
                  component_name(a_type) + "*" + component_name(b_type) + "+" +
                  component_name(c_type) + "->" + component_name(result_type);
  if (saturating) s += " saturating";
  if (scope == VK_SCOPE_WORKGROUP_KHR)
    s += " workgroup";
  else if (scope != VK_SCOPE_SUBGROUP_KHR)
    s += " scope " + std::to_string(scope);
  if (workgroup_invocations != 0) s += " wg" + std::to_string(workgroup_invocations);
  return s;
}

uint64_t DeviceInfo::device_local_bytes() const {
  uint64_t total = 0;
  for (const auto& h : heaps)
    if (h.device_local) total += h.size_bytes;
  return total;
}

std::string DeviceInfo::type_name() const {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string DeviceInfo::vendor_name() const {
  switch (vendor) {
    case Vendor::nvidia:
      return "nvidia";
    case Vendor::amd:
      return "amd";
    case Vendor::intel:
      return "intel";
    case Vendor::arm:
      return "arm";
    case Vendor::qualcomm:
      return "qualcomm";
    case Vendor::apple:
      return "apple";
    case Vendor::imgtec:
      return "imgtec";
    case Vendor::mesa:
      return "mesa";
    default:
      return "other";
  }
}

std::string DeviceInfo::driver_version_string() const {
  std::ostringstream s;
  if (vendor == Vendor::nvidia) {
    // NVIDIA packs 10.8.8.6 bits.
    s << (driver_version >> 22) << '.' << ((driver_version >> 14) & 0xff) << '.'
      << ((driver_version >> 6) & 0xff);
  } else {
    s << VK_API_VERSION_MAJOR(driver_version) << '.' << VK_API_VERSION_MINOR(driver_version) << '.'
      << VK_API_VERSION_PATCH(driver_version);
  }
  return s.str();
}

uint32_t DeviceInfo::mesa_major() const {
  static constexpr std::string_view k_prefix = "Mesa ";
  if (driver_info.compare(0, k_prefix.size(), k_prefix) != 0) return 0;
  uint32_t major = 0;
  size_t i = k_prefix.size();
  for (; i < driver_info.size() && i < k_prefix.size() + 4 && driver_info[i] >= '0' &&
         driver_info[i] <= '9';
       ++i)
    major = major * 10 + uint32_t(driver_info[i] - '0');
  return i < driver_info.size() && driver_info[i] == '.' ? major : 0;
}

DeviceInfo query_device_info(VkPhysicalDevice physical, uint32_t index, VkInstance instance) {
  DeviceInfo info;
  info.index = index;
  info.physical = physical;

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &ext_count, exts.data());
  info.nv_coopmat = has_extension(exts, "VK_NV_cooperative_matrix");
  info.khr_coopmat = has_extension(exts, "VK_KHR_cooperative_matrix");
  info.nv_coopmat2.listed = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  info.memory_budget = has_extension(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  info.external_memory_host = has_extension(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);

  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties sg_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceMaintenance4Properties maint4{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  driver.pNext = &subgroup;
  subgroup.pNext = &maint3;
  bool has_sg_control = has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  bool has_maint4 = has_extension(exts, VK_KHR_MAINTENANCE_4_EXTENSION_NAME);
  void** tail = &maint3.pNext;
  // Appends a properties struct to the chain vkGetPhysicalDeviceProperties2 fills.
  auto chain = [&tail](auto& props) {
    *tail = &props;
    tail = &props.pNext;
  };
  if (has_sg_control) chain(sg_control);
  if (has_maint4) chain(maint4);
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host_import{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  if (info.external_memory_host) chain(host_import);
  VkPhysicalDeviceCooperativeMatrixPropertiesNV coop_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
  if (info.nv_coopmat) chain(coop_props);
  VkPhysicalDeviceCooperativeMatrixPropertiesKHR khr_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
  if (info.khr_coopmat) chain(khr_props);
  VkPhysicalDeviceCooperativeMatrix2PropertiesNV nv2_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
  if (info.nv_coopmat2.listed) chain(nv2_props);
  // The device's compute units (split-k's target, DeviceInfo::compute_units), where the vendor
  // has an extension that says.
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv_sm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  const bool has_nv_sm = has_extension(exts, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  if (has_nv_sm) chain(nv_sm);
  VkPhysicalDeviceShaderCorePropertiesAMD amd_cores{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  const bool has_amd_cores = has_extension(exts, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
  if (has_amd_cores) chain(amd_cores);
  VkPhysicalDeviceShaderCoreProperties2AMD amd_cores2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
  const bool has_amd_cores2 = has_extension(exts, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
  if (has_amd_cores2) chain(amd_cores2);
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &driver;
  vkGetPhysicalDeviceProperties2(physical, &props2);
  const auto& p = props2.properties;

  if (info.external_memory_host)
    info.host_pointer_alignment = host_import.minImportedHostPointerAlignment;
  info.name = p.deviceName;
  info.vendor_id = p.vendorID;
  info.device_id = p.deviceID;
  info.vendor = vendor_from_id(p.vendorID);
  info.type = p.deviceType;
  info.api_version = p.apiVersion;
  info.driver_version = p.driverVersion;
  info.driver_name = driver.driverName;
  info.driver_info = driver.driverInfo;
  std::memcpy(info.pipeline_cache_uuid.data(), p.pipelineCacheUUID, VK_UUID_SIZE);
  info.subgroup_size = subgroup.subgroupSize;
  info.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  info.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  info.min_subgroup_size = has_sg_control ? sg_control.minSubgroupSize : subgroup.subgroupSize;
  info.max_subgroup_size = has_sg_control ? sg_control.maxSubgroupSize : subgroup.subgroupSize;
  info.shared_memory_bytes = p.limits.maxComputeSharedMemorySize;
  info.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    info.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
    info.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  }
  info.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  info.max_stage_storage_buffers = p.limits.maxPerStageDescriptorStorageBuffers;
  info.max_stage_sampled_images = p.limits.maxPerStageDescriptorSampledImages;
  info.max_stage_resources = p.limits.maxPerStageResources;
  info.max_push_constant_bytes = p.limits.maxPushConstantsSize;
  info.min_storage_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  info.texel_buffer_alignment = p.limits.minTexelBufferOffsetAlignment;
  info.max_texel_buffer_elements = p.limits.maxTexelBufferElements;
  auto texel_readable = [&](VkFormat f) {
    VkFormatProperties fp{};
    vkGetPhysicalDeviceFormatProperties(physical, f, &fp);
    return (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  };
  info.texel_rgba32f = texel_readable(VK_FORMAT_R32G32B32A32_SFLOAT);
  info.texel_rgba16f = texel_readable(VK_FORMAT_R16G16B16A16_SFLOAT);
  info.max_allocation_bytes = maint3.maxMemoryAllocationSize;
  // Without maintenance4 there is no stated limit; the storage-buffer range bounds what a shader
  // can see anyway.
  info.max_buffer_bytes = has_maint4 ? maint4.maxBufferSize : maint3.maxMemoryAllocationSize;
  info.timestamp_period_ns = p.limits.timestampPeriod;
  if (has_nv_sm)
    info.compute_units = nv_sm.shaderSMCount;
  else if (has_amd_cores2)
    info.compute_units = amd_cores2.activeComputeUnitCount;
  else if (has_amd_cores)
    info.compute_units = amd_cores.shaderEngineCount * amd_cores.shaderArraysPerEngineCount *
                         amd_cores.computeUnitsPerShaderArray;
  else if (info.is_cpu())
    info.compute_units = std::max(1u, std::thread::hardware_concurrency());  // lavapipe's threads

  VkPhysicalDeviceSubgroupSizeControlFeatures sg_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  f11.pNext = &f12;
  void** ftail = &f12.pNext;
  if (has_sg_control) {
    *ftail = &sg_features;
    ftail = &sg_features.pNext;
  }
  if (info.nv_coopmat) {
    *ftail = &coop_features;
    ftail = &coop_features.pNext;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  if (info.khr_coopmat) {
    *ftail = &khr_features;
    ftail = &khr_features.pNext;
  }
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV nv2_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (info.nv_coopmat2.listed) *ftail = &nv2_features;
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  // The Vulkan 1.1 and 1.2 feature structures exist on a 1.2 device only: below it (which the
  // engine refuses to use, engine/device.cpp) the features read as absent.
  if (p.apiVersion >= VK_API_VERSION_1_2) features2.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(physical, &features2);
  info.fp16 = f12.shaderFloat16;
  info.int8 = f12.shaderInt8;
  info.storage16 = f11.storageBuffer16BitAccess;
  // Once vulkanMemoryModel is enabled, Device-scope atomics (embedding_backward, ...) need its
  // device scope too: enable the model only where both come (lavapipe has the first, not the
  // second).
  info.vulkan_memory_model = f12.vulkanMemoryModel && f12.vulkanMemoryModelDeviceScope;
  // The extension without its feature cannot be enabled (engine/device.cpp enables both).
  info.nv_coopmat = info.nv_coopmat && coop_features.cooperativeMatrix;
  info.nv_coopmat_f16_16x16x16 =
      info.nv_coopmat &&
      (coop_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      nv_coopmat_has_f16_16x16x16(instance, physical);
  // Required subgroup sizes (engine/kernel.cpp) are only for the stages the device lists.
  info.subgroup_size_control =
      has_sg_control && sg_features.subgroupSizeControl &&
      (sg_control.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
  // As for NV: the extension is usable here only with its feature and in compute shaders.
  info.khr_coopmat = info.khr_coopmat && khr_features.cooperativeMatrix &&
                     (khr_props.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  if (info.khr_coopmat) info.khr_coopmat_shapes = khr_coopmat_shapes(instance, physical);
  // VK_NV_cooperative_matrix2 builds on the KHR extension, which must be usable too.
  Coopmat2Info& nv2 = info.nv_coopmat2;
  nv2.listed = nv2.listed && info.khr_coopmat;
  if (nv2.listed) {
    nv2.workgroup_scope = nv2_features.cooperativeMatrixWorkgroupScope;
    nv2.flexible_dimensions = nv2_features.cooperativeMatrixFlexibleDimensions;
    nv2.tensor_addressing = nv2_features.cooperativeMatrixTensorAddressing;
    nv2.per_element_operations = nv2_features.cooperativeMatrixPerElementOperations;
    nv2.max_workgroup_size = nv2_props.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    nv2.max_dimension = nv2_props.cooperativeMatrixFlexibleDimensionsMaxDimension;
    nv2.reserved_shared_memory = nv2_props.cooperativeMatrixWorkgroupScopeReservedSharedMemory;
    if (nv2.flexible_dimensions) nv2.flexible_shapes = nv_coopmat2_shapes(instance, physical);
  }

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(physical, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    info.heaps.push_back({mem.memoryHeaps[i].size,
                          (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});

  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &family_count, families.data());
  info.queue_families = families;
  // Prefer a compute family that also does graphics: it is the "universal" queue with timestamp
  // support everywhere; a compute-only family is taken when it is the only one.
  int chosen = -1;
  for (uint32_t i = 0; i < family_count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (chosen < 0 || (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
      chosen = static_cast<int>(i);
      if (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) break;
    }
  }
  if (chosen >= 0) {
    info.compute_queue_family = static_cast<uint32_t>(chosen);
    info.timestamp_valid_bits = families[chosen].timestampValidBits;
  }
  return info;
}

std::vector<DeviceInfo> query_all_devices(const std::vector<VkPhysicalDevice>& physicals,
                                          VkInstance instance) {
  std::vector<DeviceInfo> out;
  for (uint32_t i = 0; i < physicals.size(); ++i)
    out.push_back(query_device_info(physicals[i], i, instance));
  return out;
}

const DeviceInfo& select_device(const std::vector<DeviceInfo>& devices,
                                const std::string& selector) {
  if (devices.empty())
    throw Error(
        "no Vulkan device found; install a driver (Debian: mesa-vulkan-drivers provides the CPU "
        "device lavapipe)");
  if (selector.empty() || selector == "auto" || selector == "best") {
    const DeviceInfo* best = &devices[0];
    for (const auto& d : devices) {
      int r = type_rank(d.type), rb = type_rank(best->type);
      if (r < rb || (r == rb && d.device_local_bytes() > best->device_local_bytes())) best = &d;
    }
    return *best;
  }
  bool numeric = std::all_of(selector.begin(), selector.end(),
                             [](unsigned char c) { return std::isdigit(c); });
  if (numeric) {
    // No index has ten digits; std::stoul would throw a bare "stoul" past 2^64.
    const size_t idx = selector.size() <= 9 ? std::stoul(selector) : devices.size();
    if (idx < devices.size()) return devices[idx];
  } else {
    std::string sel = lower(selector);
    for (const auto& d : devices)
      if (d.vendor_name() == sel || d.type_name() == sel) return d;
    for (const auto& d : devices)
      if (lower(d.name).find(sel) != std::string::npos) return d;
  }
  std::string msg = "no Vulkan device matches '" + selector + "'; devices:";
  for (const auto& d : devices)
    msg += " [" + std::to_string(d.index) + "] " + d.name + " (" + d.vendor_name() + ", " +
           d.type_name() + ");";
  msg += " select by index, vendor, type or a part of the name";
  throw Error(msg);
}

std::string devices_table(const std::vector<DeviceInfo>& devices) {
  std::ostringstream s;
  for (const auto& d : devices) {
    s << "[" << d.index << "] " << d.name << "\n";
    s << "    vendor " << d.vendor_name() << " (0x" << std::hex << d.vendor_id << std::dec << "), "
      << d.type_name() << ", driver " << d.driver_name << " " << d.driver_info << ", Vulkan "
      << VK_API_VERSION_MAJOR(d.api_version) << "." << VK_API_VERSION_MINOR(d.api_version) << "."
      << VK_API_VERSION_PATCH(d.api_version) << "\n";
    s << "    memory:";
    for (size_t i = 0; i < d.heaps.size(); ++i)
      s << " heap" << i << " " << format_bytes(d.heaps[i].size_bytes)
        << (d.heaps[i].device_local ? " device-local" : " host");
    s << "\n";
    s << "    subgroup " << d.subgroup_size << " (" << d.min_subgroup_size << ".."
      << d.max_subgroup_size << "), shared memory " << format_bytes(d.shared_memory_bytes)
      << ", workgroup max " << d.max_workgroup_invocations << ", compute units "
      << (d.compute_units ? std::to_string(d.compute_units) : std::string("unknown")) << "\n";
    s << "    fp16 " << (d.fp16 ? "yes" : "no") << ", int8 " << (d.int8 ? "yes" : "no")
      << ", 16-bit storage " << (d.storage16 ? "yes" : "no") << ", cooperative matrix "
      << (d.khr_coopmat ? "KHR" : "") << (d.khr_coopmat && d.nv_coopmat ? "+" : "")
      << (d.nv_coopmat ? "NV" : "") << (!d.khr_coopmat && !d.nv_coopmat ? "no" : "")
      << (d.nv_coopmat_f16_16x16x16 ? " (NV 16x16x16 fp16->fp32)" : "") << ", timestamps "
      << (d.timestamp_valid_bits ? "yes" : "no") << "\n";
    if (!d.khr_coopmat_shapes.empty()) {
      s << "    KHR cooperative matrix shapes (M x N x K A*B+C->result):";
      for (const auto& shape : d.khr_coopmat_shapes) s << " " << shape.describe() << ";";
      s << "\n";
    }
    if (d.nv_coopmat2.listed) {
      const Coopmat2Info& c = d.nv_coopmat2;
      s << "    NV cooperative matrix 2: workgroup scope " << (c.workgroup_scope ? "yes" : "no")
        << ", flexible dimensions " << (c.flexible_dimensions ? "yes" : "no")
        << ", tensor addressing " << (c.tensor_addressing ? "yes" : "no")
        << ", per-element operations " << (c.per_element_operations ? "yes" : "no") << "\n";
      if (!c.flexible_shapes.empty()) {
        s << "    NV flexible shapes (granularities):";
        for (const auto& shape : c.flexible_shapes) s << " " << shape.describe() << ";";
        s << "\n";
      }
    }
  }
  return s.str();
}

std::string devices_json(const std::vector<DeviceInfo>& devices) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : devices) {
    nlohmann::json heaps = nlohmann::json::array();
    for (const auto& h : d.heaps)
      heaps.push_back({{"size_bytes", h.size_bytes}, {"device_local", h.device_local}});
    auto shapes_json = [](const std::vector<CoopmatShape>& shapes) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& c : shapes) {
        nlohmann::json j = {
            {"m", c.m},
            {"n", c.n},
            {"k", c.k},
            {"a", component_name(c.a_type)},
            {"b", component_name(c.b_type)},
            {"c", component_name(c.c_type)},
            {"result", component_name(c.result_type)},
            {"saturating", c.saturating},
            {"scope", c.scope == VK_SCOPE_SUBGROUP_KHR    ? "subgroup"
                      : c.scope == VK_SCOPE_WORKGROUP_KHR ? "workgroup"
                                                          : std::to_string(c.scope)}};
        if (c.workgroup_invocations != 0) j["workgroup_invocations"] = c.workgroup_invocations;
        list.push_back(j);
      }
      return list;
    };
    const Coopmat2Info& nv2 = d.nv_coopmat2;
    nlohmann::json nv2_json = nullptr;
    if (nv2.listed)
      nv2_json = {{"workgroup_scope", nv2.workgroup_scope},
                  {"flexible_dimensions", nv2.flexible_dimensions},
                  {"tensor_addressing", nv2.tensor_addressing},
                  {"per_element_operations", nv2.per_element_operations},
                  {"max_workgroup_size", nv2.max_workgroup_size},
                  {"max_dimension", nv2.max_dimension},
                  {"reserved_shared_memory", nv2.reserved_shared_memory},
                  {"flexible_shapes", shapes_json(nv2.flexible_shapes)}};
    out.push_back({
        {"index", d.index},
        {"name", d.name},
        {"vendor", d.vendor_name()},
        {"vendor_id", d.vendor_id},
        {"device_id", d.device_id},
        {"type", d.type_name()},
        {"driver_name", d.driver_name},
        {"driver_info", d.driver_info},
        {"driver_version", d.driver_version_string()},
        {"api_version", std::to_string(VK_API_VERSION_MAJOR(d.api_version)) + "." +
                            std::to_string(VK_API_VERSION_MINOR(d.api_version)) + "." +
                            std::to_string(VK_API_VERSION_PATCH(d.api_version))},
        {"memory_heaps", heaps},
        {"subgroup_size", d.subgroup_size},
        {"subgroup_size_min", d.min_subgroup_size},
        {"subgroup_size_max", d.max_subgroup_size},
        {"subgroup_arithmetic", d.subgroup_arithmetic},
        {"subgroup_shuffle", d.subgroup_shuffle},
        {"shared_memory_bytes", d.shared_memory_bytes},
        {"max_workgroup_invocations", d.max_workgroup_invocations},
        {"compute_units", d.compute_units},
        {"max_allocation_bytes", d.max_allocation_bytes},
        {"max_buffer_bytes", d.max_buffer_bytes},
        {"max_storage_buffer_range", d.max_storage_buffer_range},
        {"fp16", d.fp16},
        {"int8", d.int8},
        {"storage16", d.storage16},
        {"cooperative_matrix_nv", d.nv_coopmat},
        {"cooperative_matrix_nv_f16_16x16x16", d.nv_coopmat_f16_16x16x16},
        {"vulkan_memory_model", d.vulkan_memory_model},
        {"cooperative_matrix_khr", d.khr_coopmat},
        {"cooperative_matrix_khr_shapes", shapes_json(d.khr_coopmat_shapes)},
        {"cooperative_matrix_nv2", nv2_json},
        {"external_memory_host", d.external_memory_host},
        {"timestamps", d.timestamp_valid_bits != 0},
    });
  }
  return out.dump(2);
}

}  // namespace vkf
