#include "engine/device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/error.h"
#include "engine/vk_coopmat_nv2.h"

namespace vkf {
namespace {

// A limit of 0 is one the DeviceInfo was not given (a hand-made one), not a device's.
KernelLimits kernel_limits(const DeviceInfo& info) {
  auto or_none = [](uint32_t v) { return v ? v : ~0u; };
  return {or_none(info.max_stage_storage_buffers), or_none(info.max_stage_sampled_images),
          or_none(info.max_stage_resources), or_none(info.max_push_constant_bytes)};
}

std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice physical) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, exts.data());
  return exts;
}

bool has(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(),
                     [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

VkBool32 timeline_supported(VkPhysicalDevice physical) {
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  return f12.timelineSemaphore;
}

std::string make_label(const DeviceInfo& info) {
  return "device [" + std::to_string(info.index) + "] " + info.name;
}

}  // namespace

Device::Device(std::shared_ptr<Instance> instance, const DeviceInfo& info,
               const DeviceOptions& options)
    : instance_(std::move(instance)), info_(info), options_(options), label_(make_label(info)) {
  // The engine's Vulkan 1.2 core (timeline semaphores, the 1.1/1.2 feature structures) is not
  // there below 1.2: refuse by name rather than make calls such a device does not define.
  if (info.api_version < VK_API_VERSION_1_2)
    throw Error(
        label_ + " reports Vulkan " + std::to_string(VK_API_VERSION_MAJOR(info.api_version)) + "." +
        std::to_string(VK_API_VERSION_MINOR(info.api_version)) + "; vkformer needs Vulkan 1.2");
  cap_api_version();
  use_queue_family(options.queue_family.value_or(
      info.queue_families.empty() ? info.compute_queue_family
                                  : choose_queue_family(info.queue_families, options.queue)));
  auto exts = device_extensions(info.physical);
  std::vector<const char*> enable;
  // Only what the engine uses, and only where present: a device without them still runs the
  // fp32 paths.
  for (const char* e : {VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME,
                        VK_KHR_MAINTENANCE_4_EXTENSION_NAME, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME,
                        VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME, "VK_NV_cooperative_matrix"})
    if (has(exts, e)) enable.push_back(e);
  // Only with its feature and compute stage (DeviceInfo::khr_coopmat), which the shaders need.
  if (info.khr_coopmat) enable.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  // Likewise VK_NV_cooperative_matrix2 (on top of the KHR extension), with those of its features
  // the engine's kernels use that the device has (shaders/matmul_coopmat_nv2.comp needs all).
  const Coopmat2Info& nv2 = info.nv_coopmat2;
  if (nv2.listed) enable.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures sg{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDeviceMaintenance4Features m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  f11.storageBuffer16BitAccess = info.storage16;
  f12.shaderFloat16 = info.fp16;
  f12.shaderInt8 = info.int8;
  // Declared by the cooperative-matrix shaders (shaders/matmul_coopmat.comp); the device scope
  // keeps the other shaders' Device-scope atomics valid under the model.
  f12.vulkanMemoryModel = f12.vulkanMemoryModelDeviceScope = info.vulkan_memory_model;
  // Core in Vulkan 1.2 (and required there): lets a host order its work after the engine's
  // (Timeline, SubmitSync).
  f12.timelineSemaphore = timeline_supported(info.physical);
  timeline_semaphores_ = f12.timelineSemaphore == VK_TRUE;
  f11.pNext = &f12;
  void** tail = &f12.pNext;
  if (has(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) && info.subgroup_size_control) {
    sg.subgroupSizeControl = VK_TRUE;
    *tail = &sg;
    tail = &sg.pNext;
  }
  if (has(exts, VK_KHR_MAINTENANCE_4_EXTENSION_NAME)) {
    m4.maintenance4 = VK_TRUE;
    *tail = &m4;
    tail = &m4.pNext;
  }
  if (info.nv_coopmat) {
    coop.cooperativeMatrix = VK_TRUE;
    *tail = &coop;
    tail = &coop.pNext;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR khr_coop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  if (info.khr_coopmat) {
    khr_coop.cooperativeMatrix = VK_TRUE;
    *tail = &khr_coop;
    tail = &khr_coop.pNext;
  }
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV nv2_coop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (nv2.listed) {
    nv2_coop.cooperativeMatrixWorkgroupScope = nv2.workgroup_scope;
    nv2_coop.cooperativeMatrixFlexibleDimensions = nv2.flexible_dimensions;
    nv2_coop.cooperativeMatrixTensorAddressing = nv2.tensor_addressing;
    nv2_coop.cooperativeMatrixPerElementOperations = nv2.per_element_operations;
    *tail = &nv2_coop;
  }
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &f11;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = info_.compute_queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &features;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = static_cast<uint32_t>(enable.size());
  di.ppEnabledExtensionNames = enable.data();
  check(vkCreateDevice(info.physical, &di, nullptr, &device_), "creating " + label_);
  vkGetDeviceQueue(device_, info_.compute_queue_family, 0, &queue_);
  try {
    init_common();
  } catch (...) {
    // No destructor runs for a constructor that throws: free what was made (a memory cap that
    // refuses the staging ring, say), so that a refusal leaks nothing.
    release();
    throw;
  }
}

Device::Device(Adopted, std::shared_ptr<Instance> instance, const DeviceInfo& info, VkDevice device,
               VkQueue queue, const DeviceOptions& options)
    : instance_(std::move(instance)),
      info_(info),
      options_(options),
      label_(make_label(info) + " (adopted)"),
      owned_(false),
      timeline_semaphores_(options.adopted.timeline_semaphore),
      device_(device),
      queue_(queue) {
  cap_api_version();
  // The host decided which features it enabled; rely on none beyond Vulkan 1.2 core.
  info_.fp16 = info_.int8 = info_.storage16 = info_.nv_coopmat = info_.khr_coopmat = false;
  info_.nv_coopmat_f16_16x16x16 = info_.vulkan_memory_model = false;
  info_.khr_coopmat_shapes.clear();
  info_.nv_coopmat2 = {};
  info_.subgroup_size_control = false;
  info_.memory_budget = false;
  info_.external_memory_host = false;
}

void Device::cap_api_version() {
  // Vulkan uses a device at no higher version than its instance's: a kernel that needs 1.3
  // (SPIR-V 1.6) must not be chosen for a 1.3 device under a 1.2 instance.
  info_.api_version = std::min(info_.api_version, instance_->api_version());
}

void Device::use_queue_family(uint32_t family) {
  if (!info_.queue_families.empty()) {
    if (family >= info_.queue_families.size() ||
        !(info_.queue_families[family].queueFlags & VK_QUEUE_COMPUTE_BIT))
      throw Error("queue family " + std::to_string(family) + " of " + label_ +
                  " does not exist or has no compute");
    info_.timestamp_valid_bits = info_.queue_families[family].timestampValidBits;
  }
  info_.compute_queue_family = family;
}

std::unique_ptr<Device> Device::create(std::shared_ptr<Instance> instance,
                                       const DeviceOptions& options) {
  auto infos = query_all_devices(instance->physical_devices(), instance->get());
  const DeviceInfo& chosen = select_device(infos, options.selector);
  return std::make_unique<Device>(std::move(instance), chosen, options);
}

std::unique_ptr<Device> Device::adopt(std::shared_ptr<Instance> instance, VkPhysicalDevice physical,
                                      VkDevice device, VkQueue queue, uint32_t queue_family,
                                      const DeviceOptions& options) {
  if (device == VK_NULL_HANDLE || queue == VK_NULL_HANDLE || physical == VK_NULL_HANDLE)
    throw Error("Device::adopt: null handle");
  auto physicals = instance->physical_devices();
  uint32_t index = 0;
  for (uint32_t i = 0; i < physicals.size(); ++i)
    if (physicals[i] == physical) index = i;
  DeviceInfo info = query_device_info(physical, index, instance->get());
  auto dev = std::unique_ptr<Device>(
      new Device(Adopted{}, std::move(instance), info, device, queue, options));
  dev->use_queue_family(queue_family);
  dev->init_common();
  return dev;
}

void Device::init_common() {
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = info_.compute_queue_family;
  VkCommandPool pool = VK_NULL_HANDLE;
  check(vkCreateCommandPool(device_, &pi, nullptr, &pool), "creating command pool on " + label_);
  pool_ = OwnedCommandPool(device_, pool);

  allocator_ = std::make_unique<Allocator>(device_, info_, label_, options_.memory);
  pipeline_cache_ = std::make_unique<PipelineCache>(device_, info_, options_.pipeline_cache_dir);
  kernels_ = std::make_unique<KernelCache>(device_, pipeline_cache_->get(), label_,
                                           info_.subgroup_size_control,
                                           options_.on_pipeline_compile, kernel_limits(info_));
  staging_ = allocator_->allocate(options_.staging_bytes, MemoryKind::host, "staging ring");

  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device_, &ai, &transfer_cmd_), "allocating command buffer");
  transfer_fence_ = OwnedFence(device_, create_fence());
}

Device::~Device() {
  release();
}

void Device::release() {
  // Wait only for our own work: an adopted queue may carry the host's commands too.
  if (transfer_fence_) {
    VkFence f = transfer_fence_.get();
    vkWaitForFences(device_, 1, &f, VK_TRUE, UINT64_MAX);
  }
  transfer_fence_.reset();
  staging_.reset();
  kernels_.reset();
  pipeline_cache_.reset();
  allocator_.reset();
  pool_.reset();
  if (owned_ && device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
  device_ = VK_NULL_HANDLE;
}

VkFence Device::create_fence() {
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
  VkFence fence = VK_NULL_HANDLE;
  check(vkCreateFence(device_, &fi, nullptr, &fence), "creating fence on " + label_);
  return fence;
}

void Device::submit(VkCommandBuffer cmd, VkFence fence, const std::string& what,
                    const SubmitSync& sync) {
  std::vector<VkSemaphore> waits, signals;
  std::vector<VkPipelineStageFlags> stages;
  std::vector<uint64_t> wait_values, signal_values;
  bool timeline = false;
  for (const SemaphoreOp& w : sync.wait) {
    if (w.semaphore == VK_NULL_HANDLE) throw Error("submitting " + what + ": null wait semaphore");
    waits.push_back(w.semaphore);
    stages.push_back(w.stage);
    wait_values.push_back(w.value);
    timeline |= w.value != 0;
  }
  for (const SemaphoreOp& s : sync.signal) {
    if (s.semaphore == VK_NULL_HANDLE)
      throw Error("submitting " + what + ": null signal semaphore");
    signals.push_back(s.semaphore);
    signal_values.push_back(s.value);
    timeline |= s.value != 0;
  }
  check(vkResetFences(device_, 1, &fence), "resetting fence on " + label_);
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  si.waitSemaphoreCount = static_cast<uint32_t>(waits.size());
  si.pWaitSemaphores = waits.data();
  si.pWaitDstStageMask = stages.data();
  si.signalSemaphoreCount = static_cast<uint32_t>(signals.size());
  si.pSignalSemaphores = signals.data();
  // Values of binary semaphores in the lists are ignored by the driver.
  VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ti.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
  ti.pWaitSemaphoreValues = wait_values.data();
  ti.signalSemaphoreValueCount = static_cast<uint32_t>(signal_values.size());
  ti.pSignalSemaphoreValues = signal_values.data();
  if (timeline) si.pNext = &ti;
  check(vkQueueSubmit(queue_, 1, &si, fence), "submitting " + what + " on " + label_);
}

uint32_t Device::note_dispatched(const std::vector<VkPipeline>& pipelines) {
  std::lock_guard lock(dispatched_mutex_);
  uint32_t fresh = 0;
  for (VkPipeline p : pipelines) fresh += dispatched_.insert(p).second ? 1 : 0;
  return fresh;
}

void Device::wait_fence(VkFence fence, const std::string& what, uint32_t first_dispatches) {
  using clock = std::chrono::steady_clock;
  const double limit = first_dispatches > 0 ? std::max(options_.timeout_seconds,
                                                       options_.first_dispatch_timeout_seconds)
                                            : options_.timeout_seconds;
  // A wait that includes first dispatches goes in slices (10 s), telling the observer after
  // each: the user sees that kernels are compiling, not a silent minute.
  const double slice = first_dispatches > 0 && options_.on_first_dispatch_wait
                           ? std::min(options_.first_dispatch_progress_seconds, limit)
                           : limit;
  const auto start = clock::now();
  for (;;) {
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    const double next = std::max(0.0, std::min(slice, limit - waited));
    VkResult r = vkWaitForFences(device_, 1, &fence, VK_TRUE, static_cast<uint64_t>(next * 1e9));
    if (r != VK_TIMEOUT) {
      check(r, "waiting for " + what + " on " + label_);
      return;
    }
    const double now = std::chrono::duration<double>(clock::now() - start).count();
    if (now >= limit) {
      const std::string why = first_dispatches > 0
                                  ? ", which dispatches " + std::to_string(first_dispatches) +
                                        " kernels for the first time (their compile included; "
                                        "DeviceOptions::first_dispatch_timeout_seconds)"
                                  : "";
      throw Error("timed out after " + std::to_string(int(limit)) + " s waiting for " + what + why +
                  " on " + label_ + " (the device may be hung)");
    }
    if (options_.on_first_dispatch_wait) options_.on_first_dispatch_wait(first_dispatches, now);
  }
}

void Device::run_once(const std::function<void(VkCommandBuffer)>& record, const std::string& what) {
  VkFence fence = transfer_fence_.get();
  wait_fence(fence, what);
  check(vkResetCommandBuffer(transfer_cmd_, 0), "resetting command buffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(transfer_cmd_, &bi), "beginning command buffer");
  // Earlier submissions (compute or transfer) may still be writing what this one touches.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                     VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(transfer_cmd_,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
  record(transfer_cmd_);
  // Make the results visible to the host and to later submissions.
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT |
                     VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(transfer_cmd_,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                           VK_PIPELINE_STAGE_TRANSFER_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
  check(vkEndCommandBuffer(transfer_cmd_), "ending command buffer");
  submit(transfer_cmd_, fence, what);
  wait_fence(fence, what);
}

void Device::upload(const BufferRef& dst, const void* src, size_t bytes) {
  if (bytes > dst.size)
    throw Error("upload of " + std::to_string(bytes) + " bytes into a buffer of " +
                std::to_string(dst.size));
  const auto* in = static_cast<const std::byte*>(src);
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min<size_t>(bytes - done, staging_.size());
    std::memcpy(staging_.mapped(), in + done, n);
    run_once(
        [&](VkCommandBuffer cmd) {
          VkBufferCopy c{staging_.ref().offset, dst.offset + done, n};
          vkCmdCopyBuffer(cmd, staging_.ref().buffer, dst.buffer, 1, &c);
        },
        "upload");
    done += n;
  }
}

void Device::download(const BufferRef& src, void* dst, size_t bytes) {
  if (bytes > src.size)
    throw Error("download of " + std::to_string(bytes) + " bytes from a buffer of " +
                std::to_string(src.size));
  auto* out = static_cast<std::byte*>(dst);
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min<size_t>(bytes - done, staging_.size());
    run_once(
        [&](VkCommandBuffer cmd) {
          VkBufferCopy c{src.offset + done, staging_.ref().offset, n};
          vkCmdCopyBuffer(cmd, src.buffer, staging_.ref().buffer, 1, &c);
        },
        "download");
    std::memcpy(out + done, staging_.mapped(), n);
    done += n;
  }
}

}  // namespace vkf
