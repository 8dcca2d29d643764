#include "engine/device_profile.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/json_limits.h"

namespace vkf {
namespace {

using nlohmann::json;

const json& section(const json& j, const char* key) {
  static const json empty = json::object();
  auto it = j.find(key);
  return it == j.end() ? empty : *it;
}

template <typename T>
void lower_to(ProfileApplied& out, const char* what, T& have, const json& limits, const char* key,
              int index = -1) {
  auto it = limits.find(key);
  if (it == limits.end()) return;
  const json& v = index >= 0 ? it->at(size_t(index)) : *it;
  const T wanted = v.is_boolean() ? T(v.get<bool>()) : json_number<T>(v, key);
  if (wanted > have)
    out.clamps.push_back(std::string(what) + ": the profile says " + std::to_string(wanted) +
                         ", the device has " + std::to_string(have));
  else
    have = wanted;
}

template <typename T>
void raise_to(T& have, const json& limits, const char* key) {
  if (auto it = limits.find(key); it != limits.end())
    have = std::max(have, json_number<T>(*it, key));
}

// A feature the profile turns off; true keeps the device's.
void feature(bool& have, const json& features, const char* key) {
  if (auto it = features.find(key); it != features.end() && !it->get<bool>()) have = false;
}

uint32_t parse_version(const std::string& v) {
  unsigned major = 0, minor = 0, patch = 0;
  if (std::sscanf(v.c_str(), "%u.%u.%u", &major, &minor, &patch) < 2)
    throw Error("apiVersion '" + v + "' is not MAJOR.MINOR[.PATCH]");
  return VK_MAKE_API_VERSION(0, major, minor, patch);
}

void apply(const json& j, DeviceInfo& info, ProfileApplied& out) {
  out.name = j.at("name").get<std::string>();
  const json& l = section(j, "limits");
  lower_to(out, "maxComputeSharedMemorySize", info.shared_memory_bytes, l,
           "maxComputeSharedMemorySize");
  lower_to(out, "maxComputeWorkGroupInvocations", info.max_workgroup_invocations, l,
           "maxComputeWorkGroupInvocations");
  for (int i = 0; i < 3; ++i) {
    lower_to(out, "maxComputeWorkGroupSize", info.max_workgroup_size[i], l,
             "maxComputeWorkGroupSize", i);
    lower_to(out, "maxComputeWorkGroupCount", info.max_workgroup_count[i], l,
             "maxComputeWorkGroupCount", i);
  }
  lower_to(out, "maxStorageBufferRange", info.max_storage_buffer_range, l, "maxStorageBufferRange");
  lower_to(out, "maxPerStageDescriptorStorageBuffers", info.max_stage_storage_buffers, l,
           "maxPerStageDescriptorStorageBuffers");
  lower_to(out, "maxPerStageDescriptorSampledImages", info.max_stage_sampled_images, l,
           "maxPerStageDescriptorSampledImages");
  lower_to(out, "maxPerStageResources", info.max_stage_resources, l, "maxPerStageResources");
  lower_to(out, "maxPushConstantsSize", info.max_push_constant_bytes, l, "maxPushConstantsSize");
  lower_to(out, "maxTexelBufferElements", info.max_texel_buffer_elements, l,
           "maxTexelBufferElements");
  raise_to(info.min_storage_offset_alignment, l, "minStorageBufferOffsetAlignment");
  raise_to(info.texel_buffer_alignment, l, "minTexelBufferOffsetAlignment");

  const json& f = section(j, "features");
  feature(info.fp16, f, "shaderFloat16");
  feature(info.int8, f, "shaderInt8");
  feature(info.storage16, f, "storageBuffer16BitAccess");
  feature(info.vulkan_memory_model, f, "vulkanMemoryModel");
  feature(info.vulkan_memory_model, f, "vulkanMemoryModelDeviceScope");
  feature(info.subgroup_size_control, f, "subgroupSizeControl");
  bool coopmat = true;
  feature(coopmat, f, "cooperativeMatrix");

  const json& p = section(j, "properties");
  if (p.contains("apiVersion")) {
    const uint32_t v = parse_version(p["apiVersion"].get<std::string>());
    if (v < info.api_version) info.api_version = v;
  }
  if (p.contains("maxMemoryAllocationSize"))
    lower_to(out, "maxMemoryAllocationSize", info.max_allocation_bytes, p,
             "maxMemoryAllocationSize");
  if (p.contains("maxBufferSize"))
    lower_to(out, "maxBufferSize", info.max_buffer_bytes, p, "maxBufferSize");
  if (p.contains("deviceName")) info.name = p["deviceName"].get<std::string>() + " (profile)";
  // The kind of device decides rows and paths (a CPU device's differ from a GPU's).
  if (p.contains("deviceType")) {
    const std::string t = p["deviceType"].get<std::string>();
    if (t == "discrete")
      info.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    else if (t == "integrated")
      info.type = VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    else if (t == "cpu")
      info.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    else
      throw Error("deviceType '" + t + "' is not discrete, integrated or cpu");
  }

  if (const json& sg = section(j, "subgroup"); sg.contains("supportedOperations")) {
    const auto ops = sg["supportedOperations"].get<std::vector<std::string>>();
    auto has = [&](const char* op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); };
    info.subgroup_arithmetic = info.subgroup_arithmetic && has("arithmetic");
    info.subgroup_shuffle = info.subgroup_shuffle && has("shuffle");
  }
  if (j.contains("extensions")) {
    const auto exts = j["extensions"].get<std::vector<std::string>>();
    auto listed = [&](const char* e) {
      return std::find(exts.begin(), exts.end(), e) != exts.end();
    };
    coopmat = coopmat && listed("VK_KHR_cooperative_matrix");
    info.nv_coopmat = info.nv_coopmat && listed("VK_NV_cooperative_matrix");
    if (!listed("VK_NV_cooperative_matrix2")) info.nv_coopmat2 = {};
    info.memory_budget = info.memory_budget && listed("VK_EXT_memory_budget");
    info.external_memory_host = info.external_memory_host && listed("VK_EXT_external_memory_host");
    // Subgroup size control is core in 1.3, an extension before.
    if (info.api_version < VK_API_VERSION_1_3 && !listed("VK_EXT_subgroup_size_control"))
      info.subgroup_size_control = false;
  }
  if (!coopmat) {
    info.khr_coopmat = false;
    info.khr_coopmat_shapes.clear();
    info.nv_coopmat2 = {};
  }
  if (!info.fp16) info.nv_coopmat_f16_16x16x16 = info.nv_coopmat = false;
  if (const json& q = section(j, "queues"); q.contains("timestampValidBits"))
    info.timestamp_valid_bits =
        std::min(info.timestamp_valid_bits, json_field<uint32_t>(q, "timestampValidBits"));
}

}  // namespace

ProfileApplied apply_device_profile(DeviceInfo& info, const std::string& path) {
  const std::string text = read_whole_file(path, k_max_text_file_bytes, "the device profile");
  JsonLimits limits;
  limits.allow_comments = true;
  const json j = parse_json(text, "device profile " + path, limits);
  ProfileApplied out;
  try {
    apply(j, info, out);
  } catch (const json::exception& e) {
    throw Error("device profile " + path + ": " + printable_excerpt(e.what(), 200));
  } catch (const Error& e) {
    throw Error("device profile " + path + ": " + e.what());
  }
  return out;
}

}  // namespace vkf
