#pragma once
// Compute pipelines built from the embedded SPIR-V: one descriptor set of storage buffers (or
// uniform texel buffers, KernelSpec::texel_buffers),
// an optional push-constant block and specialization constants (ids 0..n-1, in order).
#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/handles.h"

namespace vkf {

struct KernelSpec {
  // Shader name in the registry ("fill", "matmul_f16", ...), or of a host kernel's SPIR-V
  // (Device::add_shader).
  std::string name;
  uint32_t buffers = 0;        // storage buffers at bindings 0..buffers-1
  uint32_t push_bytes = 0;     // size of the push-constant block
  std::vector<uint32_t> spec;  // specialization constants, constant_id = index (floats bitcast)
  uint32_t subgroup_size = 0;  // required subgroup size, 0 = driver's choice
  // Bindings (bit i = binding i) that are uniform texel buffers (GLSL textureBuffer) rather than
  // storage buffers: lavapipe reads them with branch-free gathers, where each lane's storage
  // buffer load becomes a loop over the lanes (see shaders/matmul.comp, VKF_TEXEL).
  uint32_t texel_buffers = 0;

  bool operator<(const KernelSpec& o) const;
};

class Kernel {
 public:
  const KernelSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  VkPipeline pipeline() const { return pipeline_.get(); }
  VkPipelineLayout layout() const { return layout_.get(); }
  VkDescriptorSetLayout set_layout() const { return set_layout_.get(); }

 private:
  friend class KernelCache;
  KernelSpec spec_;
  OwnedDescriptorSetLayout set_layout_;
  OwnedPipelineLayout layout_;
  OwnedPipeline pipeline_;
};

// "<vendor>-<device>-<driver>-<uuid>" (hex): the name of what is cached per device and driver
// version (the pipeline cache, the tuning file: engine/tuning_file.h), so that a driver update
// starts both afresh.
std::string device_cache_stem(const struct DeviceInfo& info);

// Persistent VkPipelineCache stored at <dir>/<vendor>-<device>-<driver>-<uuid>.bin, so shaders
// are compiled by the driver once per driver version; a corrupt or foreign file is ignored and
// rewritten.
class PipelineCache {
 public:
  PipelineCache(VkDevice device, const struct DeviceInfo& info, std::string dir);
  ~PipelineCache();  // saves
  VkPipelineCache get() const { return cache_.get(); }
  const std::string& path() const { return path_; }
  bool loaded_from_disk() const { return loaded_; }
  void save() const;

 private:
  VkDevice device_;
  std::string path_;
  bool loaded_ = false;
  OwnedPipelineCache cache_;
};

// Told of each pipeline the driver is asked to compile: `seconds` < 0 just before
// vkCreateComputePipelines (so a compile that never returns still names its kernel), then the
// seconds it took. Pipelines found in memory are not reported; one in the on-disk pipeline cache
// is, and takes the driver little time.
using PipelineObserver = std::function<void(const KernelSpec& spec, double seconds)>;

// "attention_rows_forward [32 4 1 64 64 7 0 1] subgroup 32": a kernel spec in one line.
std::string describe(const KernelSpec& spec);

// What a device lets one kernel bind (DeviceInfo's per-stage limits); a kernel over them is
// refused by name, before Vulkan is asked.
struct KernelLimits {
  uint32_t storage_buffers = ~0u;  // maxPerStageDescriptorStorageBuffers
  uint32_t texel_buffers = ~0u;    // maxPerStageDescriptorSampledImages
  uint32_t resources = ~0u;        // maxPerStageResources
  uint32_t push_bytes = ~0u;       // maxPushConstantsSize
};

// Why `spec` does not fit `limits` on `device_label` ("" when it does), naming the limit.
std::string kernel_limits_misfit(const KernelSpec& spec, const KernelLimits& limits,
                                 const std::string& device_label);

// Creates each (name, spec constants) pipeline once per device.
class KernelCache {
 public:
  KernelCache(VkDevice device, VkPipelineCache cache, std::string device_label,
              bool subgroup_size_control, PipelineObserver observer = {}, KernelLimits limits = {});
  const Kernel& get(const KernelSpec& spec);
  size_t size() const { return kernels_.size(); }
  // A host kernel's SPIR-V under `name` (see Device::add_shader).
  void add_shader(const std::string& name, std::span<const uint32_t> spirv);

 private:
  VkDevice device_;
  VkPipelineCache cache_;
  std::string label_;
  bool subgroup_size_control_;
  PipelineObserver observer_;
  KernelLimits limits_;
  std::map<KernelSpec, std::unique_ptr<Kernel>> kernels_;
  std::map<std::string, OwnedShaderModule> modules_;
  std::map<std::string, std::vector<uint32_t>> host_shaders_;
};

}  // namespace vkf
