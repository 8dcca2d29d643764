// VK_LAYER_VKF_profile: a test instrument that reports a device profile
// (tests/profiles/*.json, named by VKF_PROFILE) in place of the driver's own limits, features,
// extensions, properties, memory heaps and queue families. Enabled below the Khronos validation
// layer (scripts/test-profiles:
// VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation:VK_LAYER_VKF_profile), it makes validation enforce
// the profile: validation queries the device through this layer. VKF_PROFILE_LOG=1 prints the
// profile's name and every value it claimed beyond the driver's.
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tests/profile_layer/profile.h"

#define VKF_EXPORT extern "C" __attribute__((visibility("default")))

namespace vkf::profile_layer {
namespace {

constexpr const char* k_layer_name = "VK_LAYER_VKF_profile";

struct InstanceData {
  VkInstance instance = VK_NULL_HANDLE;
  PFN_vkGetInstanceProcAddr next_gipa = nullptr;
  PFN_GetPhysicalDeviceProcAddr next_gpdpa = nullptr;
  PFN_vkDestroyInstance destroy = nullptr;
  PFN_vkGetPhysicalDeviceProperties props = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 props2 = nullptr;
  PFN_vkGetPhysicalDeviceFeatures features = nullptr;
  PFN_vkGetPhysicalDeviceFeatures2 features2 = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties memory = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties2 memory2 = nullptr;
  PFN_vkGetPhysicalDeviceQueueFamilyProperties queues = nullptr;
  PFN_vkGetPhysicalDeviceQueueFamilyProperties2 queues2 = nullptr;
  PFN_vkEnumerateDeviceExtensionProperties extensions = nullptr;
  PFN_vkCreateDevice create_device = nullptr;
  PFN_vkEnumeratePhysicalDevices enumerate = nullptr;
};

struct DeviceData {
  PFN_vkGetDeviceProcAddr next_gdpa = nullptr;
  PFN_vkDestroyDevice destroy = nullptr;
  PFN_vkAllocateMemory allocate = nullptr;
  PFN_vkFreeMemory free = nullptr;
  // The profiled device's memory: its heaps' sizes bound what the device's allocations may hold
  // together, and maxMemoryAllocationSize bounds each, as on a device that has no more.
  VkPhysicalDeviceMemoryProperties memory{};
  uint64_t max_allocation = UINT64_MAX;
  std::mutex mutex;
  uint64_t heap_used[VK_MAX_MEMORY_HEAPS] = {};
  std::unordered_map<VkDeviceMemory, std::pair<uint32_t, uint64_t>> live;  // heap, bytes
};

std::mutex g_mutex;
// Dispatch keys: the loader's dispatch table pointer at the start of every dispatchable handle.
std::unordered_map<void*, std::shared_ptr<InstanceData>> g_instances;
std::unordered_map<void*, std::shared_ptr<DeviceData>> g_devices;
std::unique_ptr<Profile> g_profile;

void* key(const void* handle) {
  return *static_cast<void* const*>(handle);
}

std::shared_ptr<InstanceData> instance_data(const void* handle) {
  std::lock_guard lock(g_mutex);
  auto it = g_instances.find(key(handle));
  return it == g_instances.end() ? nullptr : it->second;
}

// The profile, read once; a bad file ends the process with the reason, as a test instrument
// that silently reported the driver's own values would pass for a profile it never applied.
const Profile& profile() {
  std::lock_guard lock(g_mutex);
  if (!g_profile) {
    const char* path = std::getenv("VKF_PROFILE");
    if (!path || !*path) {
      std::fprintf(stderr, "%s: enabled without VKF_PROFILE (a profile JSON file)\n", k_layer_name);
      std::exit(2);
    }
    try {
      g_profile = std::make_unique<Profile>(load_profile(path));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", k_layer_name, e.what());
      std::exit(2);
    }
  }
  return *g_profile;
}

// Prints the clamps once, after the first query that made them (VKF_PROFILE_LOG=1).
void report(const Profile& p) {
  static std::once_flag once;
  const char* log = std::getenv("VKF_PROFILE_LOG");
  if (!log || std::strcmp(log, "1") != 0) return;
  std::call_once(once, [&] {
    std::fprintf(stderr, "%s: reporting profile %s\n", k_layer_name, p.name.c_str());
    std::vector<std::string> seen;
    for (const auto& n : p.notes) {
      if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
      seen.push_back(n);
      std::fprintf(stderr, "%s: %s\n", k_layer_name, n.c_str());
    }
  });
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceProperties(VkPhysicalDevice pd,
                                                       VkPhysicalDeviceProperties* out) {
  auto d = instance_data(pd);
  d->props(pd, out);
  apply_properties(profile(), *out);
  report(profile());
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceProperties2(VkPhysicalDevice pd,
                                                        VkPhysicalDeviceProperties2* out) {
  auto d = instance_data(pd);
  d->props2(pd, out);
  apply_properties(profile(), out->properties);
  apply_properties_chain(profile(), out->pNext);
  report(profile());
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures(VkPhysicalDevice pd,
                                                     VkPhysicalDeviceFeatures* out) {
  instance_data(pd)->features(pd, out);
  apply_features(profile(), *out);
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceFeatures2(VkPhysicalDevice pd,
                                                      VkPhysicalDeviceFeatures2* out) {
  instance_data(pd)->features2(pd, out);
  apply_features(profile(), out->features);
  apply_features_chain(profile(), out->pNext);
}

VKAPI_ATTR void VKAPI_CALL
GetPhysicalDeviceMemoryProperties(VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties* out) {
  instance_data(pd)->memory(pd, out);
  apply_memory(profile(), *out);
}

VKAPI_ATTR void VKAPI_CALL
GetPhysicalDeviceMemoryProperties2(VkPhysicalDevice pd, VkPhysicalDeviceMemoryProperties2* out) {
  instance_data(pd)->memory2(pd, out);
  apply_memory(profile(), out->memoryProperties);
  // A heap's budget is never more than the heap.
  for (auto* s = static_cast<VkBaseOutStructure*>(out->pNext); s; s = s->pNext)
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT) {
      auto* b = reinterpret_cast<VkPhysicalDeviceMemoryBudgetPropertiesEXT*>(s);
      for (uint32_t i = 0; i < out->memoryProperties.memoryHeapCount; ++i)
        b->heapBudget[i] = std::min(b->heapBudget[i], out->memoryProperties.memoryHeaps[i].size);
    }
}

// The first `max_queue_families` families only (a device of one family is the common case).
uint32_t family_cap(const Profile& p, uint32_t n) {
  return p.max_queue_families ? std::min(n, *p.max_queue_families) : n;
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceQueueFamilyProperties(VkPhysicalDevice pd,
                                                                  uint32_t* count,
                                                                  VkQueueFamilyProperties* out) {
  auto d = instance_data(pd);
  uint32_t n = 0;
  d->queues(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> all(n);
  d->queues(pd, &n, all.data());
  all.resize(family_cap(profile(), n));
  if (!out) {
    *count = uint32_t(all.size());
    return;
  }
  *count = std::min(*count, uint32_t(all.size()));
  for (uint32_t i = 0; i < *count; ++i) {
    out[i] = all[i];
    apply_queue_family(profile(), out[i]);
  }
}

VKAPI_ATTR void VKAPI_CALL GetPhysicalDeviceQueueFamilyProperties2(VkPhysicalDevice pd,
                                                                   uint32_t* count,
                                                                   VkQueueFamilyProperties2* out) {
  auto d = instance_data(pd);
  uint32_t n = 0;
  d->queues2(pd, &n, nullptr);
  const uint32_t capped = family_cap(profile(), n);
  if (!out) {
    *count = capped;
    return;
  }
  // The caller's structures (and their chains) are filled by the driver, for the first ones.
  *count = std::min(*count, capped);
  d->queues2(pd, count, out);
  for (uint32_t i = 0; i < *count; ++i) apply_queue_family(profile(), out[i].queueFamilyProperties);
}

VKAPI_ATTR VkResult VKAPI_CALL EnumerateDeviceExtensionProperties(VkPhysicalDevice pd,
                                                                  const char* layer,
                                                                  uint32_t* count,
                                                                  VkExtensionProperties* out) {
  if (layer && std::strcmp(layer, k_layer_name) == 0) {
    *count = 0;
    return VK_SUCCESS;
  }
  auto d = instance_data(pd);
  uint32_t n = 0;
  VkResult r = d->extensions(pd, layer, &n, nullptr);
  if (r != VK_SUCCESS) return r;
  std::vector<VkExtensionProperties> all(n);
  r = d->extensions(pd, layer, &n, all.data());
  if (r < 0) return r;
  all.resize(n);
  std::vector<VkExtensionProperties> kept;
  // Another layer's own extensions pass untouched; the driver's are filtered.
  for (const auto& e : all)
    if (layer || extension_allowed(profile(), e.extensionName)) kept.push_back(e);
  if (!out) {
    *count = uint32_t(kept.size());
    return VK_SUCCESS;
  }
  const uint32_t written = std::min(*count, uint32_t(kept.size()));
  std::copy_n(kept.begin(), written, out);
  *count = written;
  return written < kept.size() ? VK_INCOMPLETE : VK_SUCCESS;
}

template <typename Info>
VkLayerInstanceCreateInfo* instance_link(const Info* info) {
  auto* c = static_cast<const VkLayerInstanceCreateInfo*>(info->pNext);
  while (c && !(c->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
                c->function == VK_LAYER_LINK_INFO))
    c = static_cast<const VkLayerInstanceCreateInfo*>(c->pNext);
  return const_cast<VkLayerInstanceCreateInfo*>(c);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateInstance(const VkInstanceCreateInfo* info,
                                              const VkAllocationCallbacks* alloc, VkInstance* out) {
  VkLayerInstanceCreateInfo* link = instance_link(info);
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_GetPhysicalDeviceProcAddr gpdpa = link->u.pLayerInfo->pfnNextGetPhysicalDeviceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  auto create = reinterpret_cast<PFN_vkCreateInstance>(gipa(VK_NULL_HANDLE, "vkCreateInstance"));
  VkResult r = create(info, alloc, out);
  if (r != VK_SUCCESS) return r;
  auto d = std::make_shared<InstanceData>();
  d->instance = *out;
  d->next_gipa = gipa;
  d->next_gpdpa = gpdpa;
#define VKF_NEXT(member, name) d->member = reinterpret_cast<PFN_##name>(gipa(*out, #name))
  VKF_NEXT(destroy, vkDestroyInstance);
  VKF_NEXT(props, vkGetPhysicalDeviceProperties);
  VKF_NEXT(props2, vkGetPhysicalDeviceProperties2);
  VKF_NEXT(features, vkGetPhysicalDeviceFeatures);
  VKF_NEXT(features2, vkGetPhysicalDeviceFeatures2);
  VKF_NEXT(memory, vkGetPhysicalDeviceMemoryProperties);
  VKF_NEXT(memory2, vkGetPhysicalDeviceMemoryProperties2);
  VKF_NEXT(queues, vkGetPhysicalDeviceQueueFamilyProperties);
  VKF_NEXT(queues2, vkGetPhysicalDeviceQueueFamilyProperties2);
  VKF_NEXT(extensions, vkEnumerateDeviceExtensionProperties);
  VKF_NEXT(create_device, vkCreateDevice);
  VKF_NEXT(enumerate, vkEnumeratePhysicalDevices);
#undef VKF_NEXT
  // The ...2 commands of an instance below 1.1 come as their KHR aliases.
  if (!d->props2)
    d->props2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(
        gipa(*out, "vkGetPhysicalDeviceProperties2KHR"));
  if (!d->features2)
    d->features2 = reinterpret_cast<PFN_vkGetPhysicalDeviceFeatures2>(
        gipa(*out, "vkGetPhysicalDeviceFeatures2KHR"));
  profile();  // a bad profile file fails here, at the start
  std::lock_guard lock(g_mutex);
  g_instances[key(*out)] = d;
  return VK_SUCCESS;
}

// Physical devices share their instance's dispatch key only through the loader's trampoline, so
// each enumerated device is registered under its own key.
VKAPI_ATTR VkResult VKAPI_CALL EnumeratePhysicalDevices(VkInstance instance, uint32_t* count,
                                                        VkPhysicalDevice* out) {
  auto d = instance_data(instance);
  VkResult r = d->enumerate(instance, count, out);
  if (out && r >= 0) {
    std::lock_guard lock(g_mutex);
    for (uint32_t i = 0; i < *count; ++i) g_instances[key(out[i])] = d;
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL DestroyInstance(VkInstance instance,
                                           const VkAllocationCallbacks* alloc) {
  auto d = instance_data(instance);
  {
    std::lock_guard lock(g_mutex);
    for (auto it = g_instances.begin(); it != g_instances.end();)
      it = it->second == d ? g_instances.erase(it) : std::next(it);
  }
  d->destroy(instance, alloc);
}

VKAPI_ATTR VkResult VKAPI_CALL CreateDevice(VkPhysicalDevice pd, const VkDeviceCreateInfo* info,
                                            const VkAllocationCallbacks* alloc, VkDevice* out) {
  auto* c = static_cast<const VkLayerDeviceCreateInfo*>(info->pNext);
  while (c && !(c->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                c->function == VK_LAYER_LINK_INFO))
    c = static_cast<const VkLayerDeviceCreateInfo*>(c->pNext);
  if (!c) return VK_ERROR_INITIALIZATION_FAILED;
  // What the profiled device does not have is refused, as its driver would refuse it.
  if (const std::string why = refused_request(profile(), *info); !why.empty()) {
    std::fprintf(stderr, "%s: vkCreateDevice asks for the %s, which profile %s leaves out\n",
                 k_layer_name, why.c_str(), profile().name.c_str());
    return why.rfind("extension", 0) == 0 ? VK_ERROR_EXTENSION_NOT_PRESENT
                                          : VK_ERROR_FEATURE_NOT_PRESENT;
  }
  auto* link = const_cast<VkLayerDeviceCreateInfo*>(c);
  PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  auto inst = instance_data(pd);
  auto create = reinterpret_cast<PFN_vkCreateDevice>(gipa(inst->instance, "vkCreateDevice"));
  VkResult r = create(pd, info, alloc, out);
  if (r != VK_SUCCESS) return r;
  auto d = std::make_shared<DeviceData>();
  d->next_gdpa = gdpa;
  d->destroy = reinterpret_cast<PFN_vkDestroyDevice>(gdpa(*out, "vkDestroyDevice"));
  d->allocate = reinterpret_cast<PFN_vkAllocateMemory>(gdpa(*out, "vkAllocateMemory"));
  d->free = reinterpret_cast<PFN_vkFreeMemory>(gdpa(*out, "vkFreeMemory"));
  inst->memory(pd, &d->memory);
  apply_memory(profile(), d->memory);
  if (profile().max_memory_allocation_size)
    d->max_allocation = *profile().max_memory_allocation_size;
  std::lock_guard lock(g_mutex);
  g_devices[key(*out)] = d;
  return VK_SUCCESS;
}

VKAPI_ATTR void VKAPI_CALL DestroyDevice(VkDevice device, const VkAllocationCallbacks* alloc) {
  std::shared_ptr<DeviceData> d;
  {
    std::lock_guard lock(g_mutex);
    auto it = g_devices.find(key(device));
    if (it == g_devices.end()) return;
    d = it->second;
    g_devices.erase(it);
  }
  d->destroy(device, alloc);
}

std::shared_ptr<DeviceData> device_data(VkDevice device) {
  std::lock_guard lock(g_mutex);
  auto it = g_devices.find(key(device));
  return it == g_devices.end() ? nullptr : it->second;
}

// An allocation over maxMemoryAllocationSize, or past what its heap has left, fails as a device
// with no more memory fails it: VK_ERROR_OUT_OF_DEVICE_MEMORY (the engine must name the cause).
VKAPI_ATTR VkResult VKAPI_CALL AllocateMemory(VkDevice device, const VkMemoryAllocateInfo* info,
                                              const VkAllocationCallbacks* alloc,
                                              VkDeviceMemory* out) {
  auto d = device_data(device);
  const uint32_t heap = info->memoryTypeIndex < d->memory.memoryTypeCount
                            ? d->memory.memoryTypes[info->memoryTypeIndex].heapIndex
                            : 0;
  std::lock_guard lock(d->mutex);
  const uint64_t size = info->allocationSize, heap_size = d->memory.memoryHeaps[heap].size;
  const char* over = size > d->max_allocation                ? "maxMemoryAllocationSize"
                     : d->heap_used[heap] + size > heap_size ? "its heap's size"
                                                             : nullptr;
  if (over) {
    std::fprintf(stderr,
                 "%s: vkAllocateMemory of %llu bytes refused: over %s under profile %s (heap %u: "
                 "%llu of %llu bytes taken; largest allocation %llu bytes)\n",
                 k_layer_name, (unsigned long long)size, over, profile().name.c_str(), heap,
                 (unsigned long long)d->heap_used[heap], (unsigned long long)heap_size,
                 (unsigned long long)d->max_allocation);
    return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  const VkResult r = d->allocate(device, info, alloc, out);
  if (r == VK_SUCCESS) {
    d->heap_used[heap] += size;
    d->live[*out] = {heap, size};
  }
  return r;
}

VKAPI_ATTR void VKAPI_CALL FreeMemory(VkDevice device, VkDeviceMemory memory,
                                      const VkAllocationCallbacks* alloc) {
  auto d = device_data(device);
  {
    std::lock_guard lock(d->mutex);
    if (auto it = d->live.find(memory); it != d->live.end()) {
      d->heap_used[it->second.first] -= it->second.second;
      d->live.erase(it);
    }
  }
  d->free(device, memory, alloc);
}

PFN_vkVoidFunction own_instance_command(const char* name) {
#define VKF_OWN(fn, ...)                          \
  for (const char* n : {"vk" #fn, ##__VA_ARGS__}) \
    if (std::strcmp(name, n) == 0) return reinterpret_cast<PFN_vkVoidFunction>(&fn);
  VKF_OWN(CreateInstance)
  VKF_OWN(DestroyInstance)
  VKF_OWN(EnumeratePhysicalDevices)
  VKF_OWN(CreateDevice)
  VKF_OWN(GetPhysicalDeviceProperties)
  VKF_OWN(GetPhysicalDeviceProperties2, "vkGetPhysicalDeviceProperties2KHR")
  VKF_OWN(GetPhysicalDeviceFeatures)
  VKF_OWN(GetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2KHR")
  VKF_OWN(GetPhysicalDeviceMemoryProperties)
  VKF_OWN(GetPhysicalDeviceMemoryProperties2, "vkGetPhysicalDeviceMemoryProperties2KHR")
  VKF_OWN(GetPhysicalDeviceQueueFamilyProperties)
  VKF_OWN(GetPhysicalDeviceQueueFamilyProperties2, "vkGetPhysicalDeviceQueueFamilyProperties2KHR")
  VKF_OWN(EnumerateDeviceExtensionProperties)
#undef VKF_OWN
  return nullptr;
}

}  // namespace
}  // namespace vkf::profile_layer

using namespace vkf::profile_layer;

VKF_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vkf_profile_GetDeviceProcAddr(VkDevice device, const char* name) {
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&vkf_profile_GetDeviceProcAddr);
  if (std::strcmp(name, "vkDestroyDevice") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&DestroyDevice);
  if (std::strcmp(name, "vkAllocateMemory") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&AllocateMemory);
  if (std::strcmp(name, "vkFreeMemory") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&FreeMemory);
  std::shared_ptr<DeviceData> d;
  {
    std::lock_guard lock(g_mutex);
    auto it = g_devices.find(key(device));
    if (it == g_devices.end()) return nullptr;
    d = it->second;
  }
  return d->next_gdpa(device, name);
}

VKF_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vkf_profile_GetInstanceProcAddr(VkInstance instance, const char* name) {
  if (std::strcmp(name, "vkGetInstanceProcAddr") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&vkf_profile_GetInstanceProcAddr);
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&vkf_profile_GetDeviceProcAddr);
  if (auto f = own_instance_command(name)) return f;
  if (!instance) return nullptr;
  auto d = instance_data(instance);
  return d ? d->next_gipa(instance, name) : nullptr;
}

// The layer above (validation) reaches physical-device commands through this, not through
// vkGetInstanceProcAddr: without it, validation would read the driver's limits past this layer.
VKF_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vkf_profile_GetPhysicalDeviceProcAddr(VkInstance instance, const char* name) {
  if (auto f = own_instance_command(name)) return f;
  auto d = instance_data(instance);
  return d && d->next_gpdpa ? d->next_gpdpa(instance, name) : nullptr;
}

VKF_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface* v) {
  if (v->loaderLayerInterfaceVersion > 2) v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = &vkf_profile_GetInstanceProcAddr;
  v->pfnGetDeviceProcAddr = &vkf_profile_GetDeviceProcAddr;
  v->pfnGetPhysicalDeviceProcAddr = &vkf_profile_GetPhysicalDeviceProcAddr;
  return VK_SUCCESS;
}
