#pragma once
// A logical device and everything hung off it: compute queue, command pool, memory, kernels,
// pipeline cache and the staging ring. No global state: every engine object belongs to one
// Device, and several Devices (also on one physical device) live side by side.
#include <vulkan/vulkan.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/device_info.h"
#include "engine/handles.h"
#include "engine/instance.h"
#include "engine/kernel.h"
#include "engine/memory.h"
#include "engine/op_overrides.h"
#include "engine/queue_choice.h"
#include "engine/sync.h"

namespace vkf {

struct Tuning;  // engine/tuning.h

// Features of an adopted device that the engine may use because the host enabled them (the
// engine cannot ask the driver which features a VkDevice was created with).
struct AdoptedFeatures {
  bool timeline_semaphore = false;  // VkPhysicalDeviceVulkan12Features::timelineSemaphore
};

struct DeviceOptions {
  std::string selector;  // see select_device(); "" = best device
  // Directory of the on-disk pipeline cache; "" = none (kept in memory only). The library reads
  // no environment: the vkf command uses $VKF_CACHE_DIR, else ~/.cache/vkformer.
  std::string pipeline_cache_dir;
  // memory.limit_bytes caps the Vulkan memory the engine takes (0 = no cap).
  AllocatorOptions memory;
  VkDeviceSize staging_bytes = 16ull << 20;
  double timeout_seconds = 600.0;  // a submission that takes longer is reported as hung
  // A submission that dispatches kernels for the first time may include their compile: Mesa's
  // lavapipe compiles a pipeline at its first dispatch (Mesa 25.0 took 436 s for the rows-path
  // attention backward at d 64). Its wait is judged by this longer limit instead, and
  // on_first_dispatch_wait is told every first_dispatch_progress_seconds of it: how many kernels
  // are new, seconds so far.
  double first_dispatch_timeout_seconds = 3600.0;
  double first_dispatch_progress_seconds = 10.0;
  std::function<void(uint32_t new_kernels, double seconds)> on_first_dispatch_wait;
  // The queue family of a device the engine creates: `queue`'s choice, or `queue_family`.
  QueueChoice queue = QueueChoice::dedicated_compute;
  std::optional<uint32_t> queue_family;
  OpOverrides ops;          // device-wide overrides of the ops' kernel choices
  AdoptedFeatures adopted;  // Device::adopt only
  // Told of each pipeline compile and its time (engine/kernel.h); the vkf command and the tests
  // print them under VKF_LOG_PIPELINES=1.
  PipelineObserver on_pipeline_compile;
};

class Device {
 public:
  // Creates a VkDevice with one compute queue on info's physical device.
  Device(std::shared_ptr<Instance> instance, const DeviceInfo& info,
         const DeviceOptions& options = {});
  // Selects a physical device by options.selector, then as above.
  static std::unique_ptr<Device> create(std::shared_ptr<Instance> instance,
                                        const DeviceOptions& options = {});
  // Borrows a device and compute queue owned by the host application. They are never
  // destroyed, and the engine waits only on its own fences, never on the host's queue or device.
  // Only Vulkan 1.2 core features are assumed enabled (and options.adopted). Vulkan wants a
  // queue used by one thread at a time: the host must not submit to `queue` from another thread
  // while it calls into the engine.
  static std::unique_ptr<Device> adopt(std::shared_ptr<Instance> instance,
                                       VkPhysicalDevice physical, VkDevice device, VkQueue queue,
                                       uint32_t queue_family, const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  const std::string& label() const { return label_; }  // "[0] llvmpipe (LLVM 15...)"
  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return pool_.get(); }
  Instance& instance() const { return *instance_; }
  double timeout_seconds() const { return options_.timeout_seconds; }
  const DeviceOptions& options() const { return options_; }
  bool adopted() const { return !owned_; }
  // Whether Timeline (timeline semaphores) can be used on this device.
  bool timeline_semaphores() const { return timeline_semaphores_; }

  Allocator& memory() { return *allocator_; }
  Buffer allocate(VkDeviceSize bytes, const std::string& what,
                  MemoryKind kind = MemoryKind::device) {
    return allocator_->allocate(bytes, kind, what);
  }
  const Kernel& kernel(const KernelSpec& spec) { return kernels_->get(spec); }
  // A host kernel: registers the application's own SPIR-V under `name` (a compute shader with
  // entry point "main" and descriptor set 0 only, laid out as KernelSpec describes). kernel()
  // then builds pipelines from it with the spec's push constants and specialization constants,
  // like a built-in shader's, and Recorder::dispatch derives its barriers from the buffers it
  // declares. The words are copied. A built-in shader's name, or a name registered with other
  // words, is refused.
  void add_shader(const std::string& name, std::span<const uint32_t> spirv) {
    kernels_->add_shader(name, spirv);
  }
  PipelineCache& pipeline_cache() { return *pipeline_cache_; }
  // The tuned kernel configurations the ops prefer to their static tables (engine/tuning.h;
  // the tools load them from a tuning file matching this device and driver, tune/). nullptr:
  // the tables only. Set it before recording: sequences already recorded keep their kernels.
  void set_tuning(std::shared_ptr<const Tuning> tuning) { tuning_ = std::move(tuning); }
  const Tuning* tuning() const { return tuning_.get(); }

  // Blocking copies through the staging ring.
  void upload(const BufferRef& dst, const void* src, size_t bytes);
  void download(const BufferRef& src, void* dst, size_t bytes);
  template <typename T>
  void upload(const BufferRef& dst, const std::vector<T>& v) {
    upload(dst, v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> download(const BufferRef& src, size_t count) {
    std::vector<T> v(count);
    download(src, v.data(), count * sizeof(T));
    return v;
  }

  // Records commands into a one-off command buffer, submits it and waits.
  void run_once(const std::function<void(VkCommandBuffer)>& record, const std::string& what);
  // Submits a recorded command buffer with `fence` (waiting for and signalling the semaphores of
  // `sync` on the device); wait_fence() turns timeouts and device loss into clear errors naming
  // this device.
  void submit(VkCommandBuffer cmd, VkFence fence, const std::string& what,
              const SubmitSync& sync = {});
  // first_dispatches: kernels the waited-for submission dispatched for the first time (see
  // DeviceOptions::first_dispatch_timeout_seconds).
  void wait_fence(VkFence fence, const std::string& what, uint32_t first_dispatches = 0);
  // Of `pipelines`, how many were never submitted on this device before; they count as
  // submitted from now on.
  uint32_t note_dispatched(const std::vector<VkPipeline>& pipelines);
  VkFence create_fence();

 private:
  void cap_api_version();
  struct Adopted {};
  Device(Adopted, std::shared_ptr<Instance> instance, const DeviceInfo& info, VkDevice device,
         VkQueue queue, const DeviceOptions& options);
  void init_common();
  void use_queue_family(uint32_t family);
  void release();

  std::shared_ptr<Instance> instance_;
  DeviceInfo info_;
  DeviceOptions options_;
  std::string label_;
  bool owned_ = true;
  bool timeline_semaphores_ = false;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  // Destroyed in reverse order, before the device.
  OwnedCommandPool pool_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<PipelineCache> pipeline_cache_;
  std::unique_ptr<KernelCache> kernels_;
  std::shared_ptr<const Tuning> tuning_;
  Buffer staging_;
  VkCommandBuffer transfer_cmd_ = VK_NULL_HANDLE;
  OwnedFence transfer_fence_;
  std::mutex dispatched_mutex_;  // sequences of several host threads submit (multi-device)
  std::unordered_set<VkPipeline> dispatched_;
};

}  // namespace vkf
