#include "engine/kernel.h"

#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "engine/device_info.h"
#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/host_shader.h"
#include "engine/shader_registry.h"

namespace vkf {
namespace {

constexpr char k_magic[8] = {'V', 'K', 'F', 'P', 'C', 'v', '1', '\0'};

uint64_t fnv1a(const char* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

// The driver's own header must match this device before its blob is handed over: some drivers
// crash on foreign data.
bool driver_header_matches(const std::string& blob, const DeviceInfo& info) {
  if (blob.size() < sizeof(VkPipelineCacheHeaderVersionOne)) return false;
  VkPipelineCacheHeaderVersionOne h;
  std::memcpy(&h, blob.data(), sizeof h);
  return h.headerSize >= sizeof h && h.headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         h.vendorID == info.vendor_id && h.deviceID == info.device_id &&
         std::memcmp(h.pipelineCacheUUID, info.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
}

}  // namespace

std::string device_cache_stem(const DeviceInfo& info) {
  std::ostringstream name;
  name << std::hex << info.vendor_id << "-" << info.device_id << "-" << info.driver_version << "-"
       << hex(info.pipeline_cache_uuid.data(), VK_UUID_SIZE);
  return name.str();
}

bool KernelSpec::operator<(const KernelSpec& o) const {
  return std::tie(name, buffers, push_bytes, spec, subgroup_size, texel_buffers) <
         std::tie(o.name, o.buffers, o.push_bytes, o.spec, o.subgroup_size, o.texel_buffers);
}

PipelineCache::PipelineCache(VkDevice device, const DeviceInfo& info, std::string dir)
    : device_(device) {
  std::string blob;
  if (!dir.empty()) {
    path_ = dir + "/" + device_cache_stem(info) + ".bin";
    // A missing cache is the first run; anything else that cannot be read (a directory, a
    // device, a file too large to be one) is reported, naming it, and never replaced on save.
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
      const std::string file = read_whole_file(path_, k_max_cache_file_bytes, "the pipeline cache");
      constexpr size_t head = sizeof k_magic + 16;
      if (file.size() >= head && std::memcmp(file.data(), k_magic, sizeof k_magic) == 0) {
        uint64_t size = 0, hash = 0;
        std::memcpy(&size, file.data() + sizeof k_magic, 8);
        std::memcpy(&hash, file.data() + sizeof k_magic + 8, 8);
        if (size == file.size() - head && fnv1a(file.data() + head, size) == hash) {
          blob = file.substr(head);
          if (!driver_header_matches(blob, info)) blob.clear();
        }
      }
      // Anything else (truncated, corrupt, another driver's) is dropped and rebuilt on save.
    }
  }
  loaded_ = !blob.empty();
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = blob.size();
  ci.pInitialData = blob.empty() ? nullptr : blob.data();
  VkPipelineCache cache = VK_NULL_HANDLE;
  VkResult r = vkCreatePipelineCache(device, &ci, nullptr, &cache);
  if (r != VK_SUCCESS && !blob.empty()) {
    loaded_ = false;
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    r = vkCreatePipelineCache(device, &ci, nullptr, &cache);
  }
  check(r, "creating the pipeline cache");
  cache_ = OwnedPipelineCache(device, cache);
}

PipelineCache::~PipelineCache() {
  try {
    save();
  } catch (...) {
    // A cache that cannot be written only costs compile time next run.
  }
}

void PipelineCache::save() const {
  if (path_.empty()) return;
  size_t size = 0;
  if (vkGetPipelineCacheData(device_, cache_.get(), &size, nullptr) != VK_SUCCESS || size == 0)
    return;
  std::string data(size, '\0');
  if (vkGetPipelineCacheData(device_, cache_.get(), &size, data.data()) != VK_SUCCESS) return;
  data.resize(size);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
  // Written whole or not at all (engine/file_io.h): a crash or a full disk never leaves half a
  // cache, nor an empty one in place of a good one.
  AtomicFile out(path_);
  const uint64_t n = data.size(), hash = fnv1a(data.data(), data.size());
  out.write(k_magic, sizeof k_magic);
  out.write(&n, 8);
  out.write(&hash, 8);
  out.write(data.data(), data.size());
  out.commit();
}

std::string describe(const KernelSpec& spec) {
  std::string s = spec.name + " [";
  for (size_t i = 0; i < spec.spec.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(spec.spec[i]);
  }
  s += "]";
  if (spec.subgroup_size) s += " subgroup " + std::to_string(spec.subgroup_size);
  return s;
}

std::string kernel_limits_misfit(const KernelSpec& spec, const KernelLimits& limits,
                                 const std::string& device_label) {
  const uint32_t texel = uint32_t(std::popcount(spec.texel_buffers));
  const uint32_t storage = spec.buffers - texel;
  auto over = [&](uint32_t n, const char* what, uint32_t limit, const char* name) {
    return "kernel " + spec.name + " binds " + std::to_string(n) + " " + what + " but " +
           device_label + " allows " + std::to_string(limit) + " a shader stage (" + name + ")";
  };
  if (storage > limits.storage_buffers)
    return over(storage, "storage buffers", limits.storage_buffers,
                "maxPerStageDescriptorStorageBuffers");
  if (texel > limits.texel_buffers)
    return over(texel, "uniform texel buffers", limits.texel_buffers,
                "maxPerStageDescriptorSampledImages");
  if (spec.buffers > limits.resources)
    return over(spec.buffers, "resources", limits.resources, "maxPerStageResources");
  if (spec.push_bytes > limits.push_bytes)
    return "kernel " + spec.name + " takes " + std::to_string(spec.push_bytes) +
           " bytes of push constants but " + device_label + " allows " +
           std::to_string(limits.push_bytes) + " (maxPushConstantsSize)";
  return "";
}

KernelCache::KernelCache(VkDevice device, VkPipelineCache cache, std::string device_label,
                         bool subgroup_size_control, PipelineObserver observer, KernelLimits limits)
    : device_(device),
      cache_(cache),
      label_(std::move(device_label)),
      subgroup_size_control_(subgroup_size_control),
      observer_(std::move(observer)),
      limits_(limits) {}

void KernelCache::add_shader(const std::string& name, std::span<const uint32_t> spirv) {
  if (name.empty()) throw Error("add_shader: a host kernel needs a name");
  if (!shaders::find(name).empty())
    throw Error("add_shader: '" + name + "' is the name of a built-in shader");
  if (const std::string why = spirv_module_misfit(spirv); !why.empty())
    throw Error("add_shader: '" + name + "': " + why);
  std::vector<uint32_t> words(spirv.begin(), spirv.end());
  auto [it, added] = host_shaders_.emplace(name, words);
  if (!added && it->second != words)
    throw Error("add_shader: '" + name + "' was added before with other SPIR-V");
}

const Kernel& KernelCache::get(const KernelSpec& spec) {
  if (auto it = kernels_.find(spec); it != kernels_.end()) return *it->second;

  std::span<const uint32_t> words = shaders::find(spec.name);
  if (auto host = host_shaders_.find(spec.name); host != host_shaders_.end()) {
    words = host->second;
    // A layout that does not match the host's shader would fail (or worse) only in the driver.
    if (const std::string why =
            spirv_layout_misfit(words, spec.buffers, spec.texel_buffers, spec.push_bytes);
        !why.empty())
      throw Error("host kernel " + spec.name + ": " + why);
  }
  if (const std::string why = kernel_limits_misfit(spec, limits_, label_); !why.empty())
    throw Error(why);
  if (words.empty())
    throw Error("no shader named '" + spec.name +
                "' was built into vkformer or added with Device::add_shader");
  auto mod_it = modules_.find(spec.name);
  if (mod_it == modules_.end()) {
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = words.size_bytes();
    mi.pCode = words.data();
    VkShaderModule mod = VK_NULL_HANDLE;
    check(vkCreateShaderModule(device_, &mi, nullptr, &mod),
          "creating shader module " + spec.name + " on " + label_);
    mod_it = modules_.emplace(spec.name, OwnedShaderModule(device_, mod)).first;
  }

  auto k = std::make_unique<Kernel>();
  k->spec_ = spec;
  std::vector<VkDescriptorSetLayoutBinding> bindings(spec.buffers);
  for (uint32_t i = 0; i < spec.buffers; ++i)
    bindings[i] = {i,
                   (spec.texel_buffers >> i) & 1u ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                  : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                   1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = spec.buffers;
  li.pBindings = bindings.data();
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  check(vkCreateDescriptorSetLayout(device_, &li, nullptr, &set_layout),
        "creating descriptor set layout for " + spec.name);
  k->set_layout_ = OwnedDescriptorSetLayout(device_, set_layout);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, spec.push_bytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &set_layout;
  pli.pushConstantRangeCount = spec.push_bytes ? 1 : 0;
  pli.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  check(vkCreatePipelineLayout(device_, &pli, nullptr, &layout),
        "creating pipeline layout for " + spec.name);
  k->layout_ = OwnedPipelineLayout(device_, layout);

  std::vector<VkSpecializationMapEntry> entries(spec.spec.size());
  for (uint32_t i = 0; i < spec.spec.size(); ++i) entries[i] = {i, i * 4u, 4};
  VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(),
                          spec.spec.size() * 4, spec.spec.data()};
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo sg{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  sg.requiredSubgroupSize = spec.subgroup_size;

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = mod_it->second.get();
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = entries.empty() ? nullptr : &si;
  if (spec.subgroup_size != 0) {
    if (!subgroup_size_control_)
      throw Error("kernel " + spec.name + " asks for subgroup size " +
                  std::to_string(spec.subgroup_size) + " but " + label_ +
                  " has no subgroup size control");
    ci.stage.pNext = &sg;
  }
  ci.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  if (observer_) observer_(spec, -1.0);
  const auto start = std::chrono::steady_clock::now();
  check(vkCreateComputePipelines(device_, cache_, 1, &ci, nullptr, &pipeline),
        "creating compute pipeline " + spec.name + " on " + label_);
  if (observer_)
    observer_(spec,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  k->pipeline_ = OwnedPipeline(device_, pipeline);
  return *kernels_.emplace(spec, std::move(k)).first->second;
}

}  // namespace vkf
