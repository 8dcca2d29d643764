#pragma once
// What a physical device is and can do: read-only capabilities used for device selection,
// the tuning table and `vkf devices`. No Vulkan objects are created here.
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vkf {

enum class Vendor { nvidia, amd, intel, arm, qualcomm, apple, imgtec, mesa, other };

// One shape VK_KHR_cooperative_matrix lists (VkCooperativeMatrixPropertiesKHR), in plain values:
// a subgroup (or other scope) multiplies an M x K A by a K x N B and adds an M x N C.
struct CoopmatShape {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t a_type = 0, b_type = 0, c_type = 0, result_type = 0;  // VkComponentTypeKHR
  bool saturating = false;
  uint32_t scope = 0;  // VkScopeKHR
  // VK_NV_cooperative_matrix2's flexible dimensions: m, n, k are then granularities (any multiple
  // up to Coopmat2Info::max_dimension), and a workgroup-scope entry holds for workgroups of this
  // many invocations only.
  uint32_t workgroup_invocations = 0;
  // fp16 A and B, fp32 C and result, not saturating.
  bool f16_f32() const;
  // The same at subgroup scope: what shaders/matmul_coopmat_khr.comp runs.
  bool f16_f32_subgroup() const;
  // "16x16x16 f16*f16+f32->f32" (+ the scope unless subgroup, + the workgroup size if given)
  std::string describe() const;
};

// VK_NV_cooperative_matrix2 as a device lists it; the device enables the extension where listed,
// with each of these features it has. shaders/matmul_coopmat_nv2.comp needs
// workgroup scope, flexible dimensions, tensor addressing and per-element operations, and an
// f16 x f16 + f32 workgroup-scope shape whose granularities divide its tiles; whether a matmul
// row fits is matmul_config_misfit's call, which names what is missing.
struct Coopmat2Info {
  bool listed = false;  // the extension, on a device with usable VK_KHR_cooperative_matrix
  bool workgroup_scope = false;
  bool flexible_dimensions = false;
  bool tensor_addressing = false;
  bool per_element_operations = false;
  uint32_t max_workgroup_size = 0;      // cooperativeMatrixWorkgroupScopeMaxWorkgroupSize
  uint32_t max_dimension = 0;           // cooperativeMatrixFlexibleDimensionsMaxDimension
  uint32_t reserved_shared_memory = 0;  // bytes a workgroup-scope kernel cannot use itself
  // The flexible-dimension shapes; queried only when query_device_info is given the instance.
  std::vector<CoopmatShape> flexible_shapes;
};

struct MemoryHeapInfo {
  uint64_t size_bytes = 0;
  bool device_local = false;
};

struct DeviceInfo {
  uint32_t index = 0;  // position in vkEnumeratePhysicalDevices
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  std::string name;
  Vendor vendor = Vendor::other;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  std::string driver_name;
  std::string driver_info;
  uint32_t api_version = 0;  // the device's; a Device caps it at its Instance::api_version()
  uint32_t driver_version = 0;
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};
  std::vector<MemoryHeapInfo> heaps;

  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0;
  uint32_t max_subgroup_size = 0;
  bool subgroup_size_control = false;
  bool subgroup_arithmetic = false;  // compute stage supports subgroup add/max
  bool subgroup_shuffle = false;     // compute stage supports subgroupShuffle (matmul CPU row)
  uint32_t shared_memory_bytes = 0;
  // Units that run workgroups side by side: NVIDIA's SMs (VK_NV_shader_sm_builtins), AMD's
  // compute units (VK_AMD_shader_core_properties, 2), a CPU device's hardware threads (as many
  // as lavapipe runs); 0 where the driver does not say. Split-k aims to fill them.
  uint32_t compute_units = 0;
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  std::array<uint32_t, 3> max_workgroup_count{};
  uint64_t max_storage_buffer_range = 0;
  // What one shader stage may bind (a kernel's one descriptor set: engine/kernel.cpp refuses a
  // kernel over them): maxPerStageDescriptorStorageBuffers, ...SampledImages (which counts
  // uniform texel buffers), maxPerStageResources, and maxPushConstantsSize.
  uint32_t max_stage_storage_buffers = 0;
  uint32_t max_stage_sampled_images = 0;
  uint32_t max_stage_resources = 0;
  uint32_t max_push_constant_bytes = 0;
  uint64_t max_allocation_bytes = 0;
  uint64_t max_buffer_bytes = 0;
  uint64_t min_storage_offset_alignment = 0;
  // Uniform texel buffers (KernelSpec::texel_buffers): minTexelBufferOffsetAlignment,
  // maxTexelBufferElements, and whether RGBA32F / RGBA16F views can be read (both mandatory in
  // Vulkan; queried all the same).
  uint64_t texel_buffer_alignment = 0;
  uint64_t max_texel_buffer_elements = 0;
  bool texel_rgba32f = false;
  bool texel_rgba16f = false;
  uint32_t compute_queue_family = 0;
  // Every queue family, in the driver's order (engine/queue_choice.h picks among them).
  std::vector<VkQueueFamilyProperties> queue_families;
  uint32_t timestamp_valid_bits = 0;
  float timestamp_period_ns = 0.0f;

  bool fp16 = false;        // shaderFloat16 arithmetic
  bool int8 = false;        // shaderInt8
  bool storage16 = false;   // storageBuffer16BitAccess
  bool nv_coopmat = false;  // VK_NV_cooperative_matrix and its cooperativeMatrix feature
  // VK_KHR_cooperative_matrix with its cooperativeMatrix feature, for compute shaders.
  bool khr_coopmat = false;
  // The shapes it lists; queried only when query_device_info is given the instance (as the NV
  // shape below), empty otherwise.
  std::vector<CoopmatShape> khr_coopmat_shapes;
  // VK_NV_cooperative_matrix lists a subgroup-scope M = N = K = 16 shape with fp16 A and B and
  // fp32 C and D, usable from compute shaders: the one shaders/matmul_coopmat.comp multiplies.
  // Queried only when query_device_info is given the instance (the query is an instance-level
  // extension command); false otherwise.
  bool nv_coopmat_f16_16x16x16 = false;
  Coopmat2Info nv_coopmat2;
  // vulkanMemoryModel and vulkanMemoryModelDeviceScope: cooperative-matrix shaders declare the
  // VulkanMemoryModel capability (glslang's GL_KHR_memory_scope_semantics, which
  // gl_ScopeSubgroup needs, turns it on), and with the model enabled the Device-scope atomics of
  // other shaders need its device scope.
  bool vulkan_memory_model = false;
  bool memory_budget = false;
  // VK_EXT_external_memory_host: host allocations can be imported as device memory (several
  // devices then share one host buffer; engine/exchange/shared_host_memory.h).
  bool external_memory_host = false;
  uint64_t host_pointer_alignment = 0;  // minImportedHostPointerAlignment

  bool is_cpu() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  uint64_t device_local_bytes() const;
  std::string type_name() const;
  std::string vendor_name() const;
  std::string driver_version_string() const;
  // Mesa's major version, read from driver_info ("Mesa 25.0.7 (LLVM 15.0.6)": Mesa's drivers
  // report no version in driver_version); 0 for other drivers.
  uint32_t mesa_major() const;
};

// `instance` is the one `physical` came from; without it, capabilities that only an
// instance-level extension command reports (nv_coopmat_f16_16x16x16, khr_coopmat_shapes,
// nv_coopmat2.flexible_shapes) read as absent.
DeviceInfo query_device_info(VkPhysicalDevice physical, uint32_t index,
                             VkInstance instance = VK_NULL_HANDLE);
std::vector<DeviceInfo> query_all_devices(const std::vector<VkPhysicalDevice>& physicals,
                                          VkInstance instance = VK_NULL_HANDLE);

// Picks a device by selector: "" (best: discrete, then integrated, virtual, CPU), an index
// ("1"), a vendor ("nvidia", "amd", "intel", "cpu", ...) or a case-insensitive substring of the
// name. An unknown selector throws an Error that lists the devices that exist.
const DeviceInfo& select_device(const std::vector<DeviceInfo>& devices,
                                const std::string& selector);

std::string devices_table(const std::vector<DeviceInfo>& devices);
std::string devices_json(const std::vector<DeviceInfo>& devices);

}  // namespace vkf
