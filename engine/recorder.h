#pragma once
// Record once, replay many. A Recorder takes dispatches that declare which buffer ranges they
// read and write, inserts a barrier only where a dispatch depends on an earlier one (RAW, WAR,
// WAW on overlapping ranges), and yields a Sequence: a command buffer submitted as often as
// wanted. Per-step scalars live in a host-visible buffer the shaders read, written before each
// submit, so nothing is re-recorded.
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/handles.h"
#include "engine/kernel.h"
#include "engine/memory.h"
#include "engine/sync.h"

namespace vkf {

class Device;
struct DeviceInfo;

enum class Access : uint8_t { read, write, read_write };

struct Arg {
  BufferRef buffer;
  Access access;
  // For a binding the kernel declares a uniform texel buffer (KernelSpec::texel_buffers): the
  // view's format. The view covers the whole texels of `buffer`, whose offset must be a multiple
  // of the device's texel-buffer offset alignment (DeviceInfo::texel_buffer_alignment).
  VkFormat texel_format = VK_FORMAT_UNDEFINED;
};
inline Arg in(const BufferRef& b) {
  return {b, Access::read};
}
inline Arg in_texels(const BufferRef& b, VkFormat format) {
  return {b, Access::read, format};
}
// Why `info` cannot view `buffer` as a uniform texel buffer of `format` ("" when it can): a
// format the engine does not take or the device cannot read, an offset off
// DeviceInfo::texel_buffer_alignment, or no whole texel / more than the device's limit. The view
// covers the whole texels of `buffer` (size / texel_bytes(format)).
std::string texel_view_misfit(const DeviceInfo& info, const BufferRef& buffer, VkFormat format);
// Bytes per texel of the formats texel views take (RGBA32F/RGBA16F/R32F/R16F, and R32I/R32UI
// for integers); 0 for any other. The one-component 32-bit formats are mandatory for uniform
// texel buffers; the RGBA ones are checked (DeviceInfo::texel_rgba32f/16f).
uint32_t texel_bytes(VkFormat format);

inline Arg out(const BufferRef& b) {
  return {b, Access::write};
}
inline Arg inout(const BufferRef& b) {
  return {b, Access::read_write};
}

struct RecorderOptions {
  bool derive_barriers = true;  // false only for tests that prove barriers are needed
  bool profile = false;         // GPU timestamps around every dispatch
  // Two GPU timestamps, at the start and the end: Sequence::gpu_milliseconds() (what the work
  // cost a frame) without a timestamp per dispatch.
  bool timed = false;
};

struct KernelTiming {
  std::string name;
  double milliseconds = 0.0;
};

class Sequence {
 public:
  Sequence(Sequence&&) noexcept;
  Sequence& operator=(Sequence&&) noexcept;
  ~Sequence();

  // Submits; with `sync`, the device first waits for its semaphores and afterwards signals its
  // own (a Timeline value the host's queue waits for, say). Waits for an earlier submission of
  // this sequence that is still pending.
  void submit(const SubmitSync& sync = {});
  void wait();
  // Non-blocking: true once the last submission has finished (or when nothing is pending).
  // Throws DeviceLostError when the device was lost.
  bool ready() const;
  void run() {
    submit();
    wait();
  }
  uint32_t dispatch_count() const { return static_cast<uint32_t>(names_.size()); }
  // The shaders dispatched, in order (tests ask which kernel variant an op chose).
  const std::vector<std::string>& kernel_names() const { return names_; }
  uint32_t barrier_count() const { return barriers_; }
  // Per-dispatch times of the last run (profiling recorders only).
  std::vector<KernelTiming> timings() const;
  // GPU time of the last run, first command to last (timed or profiling recorders on devices
  // with timestamps; else 0). Call after wait() or once ready().
  double gpu_milliseconds() const;

 private:
  friend class Recorder;
  Sequence() = default;
  void destroy();

  Device* device_ = nullptr;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  std::vector<OwnedDescriptorPool> pools_;
  std::vector<OwnedBufferView> views_;  // the texel-buffer views its descriptor sets name
  OwnedFence fence_;
  OwnedQueryPool queries_;
  std::vector<std::string> names_;
  // The pipelines it dispatches until its first submission (emptied then), and how many of them
  // that submission dispatched for the first time on the device (Device::wait_fence).
  std::vector<VkPipeline> pipelines_;
  uint32_t first_dispatches_ = 0;
  uint32_t queries_written_ = 0;  // timestamps the command buffer writes
  uint32_t barriers_ = 0;
  bool pending_ = false;
};

class Recorder {
 public:
  explicit Recorder(Device& device, const RecorderOptions& options = {});
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Binds args to bindings 0..n-1 in order and dispatches `groups` workgroups.
  void dispatch(const Kernel& kernel, std::initializer_list<Arg> args, const void* push,
                uint32_t push_bytes, std::array<uint32_t, 3> groups);
  void dispatch(const Kernel& kernel, const std::vector<Arg>& args, const void* push,
                uint32_t push_bytes, std::array<uint32_t, 3> groups);
  template <typename Push>
  void dispatch(const Kernel& kernel, std::initializer_list<Arg> args, const Push& push,
                std::array<uint32_t, 3> groups) {
    dispatch(kernel, args, &push, sizeof(Push), groups);
  }
  void copy(const BufferRef& src, const BufferRef& dst);
  // Fills with a 32-bit pattern; offset and size must be multiples of 4.
  void fill(const BufferRef& dst, uint32_t pattern);

  uint32_t barrier_count() const { return barriers_; }
  Sequence finish();
  // Ends what was recorded so far as one Sequence and goes on recording into a new one. The
  // pieces, submitted in order to the same queue, do what one Sequence would (each begins with
  // a barrier on everything submitted before it); the host can wait for each on its own, e.g.
  // to start exchanging the gradients of the layers whose backward has finished.
  Sequence cut();

 private:
  void begin();
  struct Range {
    BufferRef buffer;
    bool write;
  };
  void track(const std::vector<Arg>& args);
  VkDescriptorSet allocate_set(const Kernel& kernel);
  VkBufferView make_texel_view(const Arg& arg, const std::string& kernel, size_t binding);
  void timestamp_after(const std::string& name);

  Device& device_;
  RecorderOptions options_;
  Sequence seq_;
  std::vector<Range> pending_;  // accesses since the last barrier
  uint32_t barriers_ = 0;
  uint32_t sets_left_ = 0;
  uint32_t query_capacity_ = 0;
  uint32_t queries_used_ = 0;
};

// Sums per-kernel times: name, calls, total ms, share; sorted by total.
std::string profile_table(const std::vector<KernelTiming>& timings);

}  // namespace vkf
