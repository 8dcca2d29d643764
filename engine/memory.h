#pragma once
// Block sub-allocator. Memory comes from a few large VkDeviceMemory blocks (within
// maxMemoryAllocationSize and maxBufferSize), each covered by one VkBuffer; an allocation is an
// offset range in a block's buffer, so binding it is a descriptor with offset and range.
#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/device_info.h"
#include "engine/handles.h"

namespace vkf {

// device: device-local (weights, activations). host: host-visible and coherent (staging,
// read-back, per-step scalars).
enum class MemoryKind { device, host };

// A non-owning view of a range of a VkBuffer.
struct BufferRef {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  std::byte* mapped = nullptr;  // host kind only

  bool valid() const { return buffer != VK_NULL_HANDLE; }
  // A sub-range, in bytes.
  BufferRef slice(VkDeviceSize byte_offset, VkDeviceSize bytes) const;
  bool overlaps(const BufferRef& o) const {
    return buffer == o.buffer && offset < o.offset + o.size && o.offset < offset + size;
  }
};

class Allocator;

// An owned allocation; returns its range to the allocator when destroyed.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  const BufferRef& ref() const { return ref_; }
  operator const BufferRef&() const { return ref_; }
  VkDeviceSize size() const { return ref_.size; }
  std::byte* mapped() const { return ref_.mapped; }
  bool valid() const { return ref_.valid(); }
  void reset();

 private:
  friend class Allocator;
  Allocator* allocator_ = nullptr;
  uint32_t block_ = 0;
  VkDeviceSize reserved_ = 0;  // bytes taken from the block (size rounded up)
  BufferRef ref_;
};

struct AllocatorOptions {
  // Size of each block; 0 picks min(256 MiB, limits, heap/4).
  VkDeviceSize block_bytes = 0;
  // The most Vulkan memory the engine may take, device-local and host-visible blocks together
  // (a game's budget for it); 0 = no cap. Blocks are then at most a quarter of it, and cut to
  // fit under it; an allocation that cannot fit throws OutOfMemoryError and leaves everything
  // as it was.
  VkDeviceSize limit_bytes = 0;
  // Queue families besides the engine's own whose commands use its buffers (a host's graphics
  // queue copying the engine's results, say): the blocks are then created with
  // VK_SHARING_MODE_CONCURRENT over these and the engine's family, so no ownership transfer is
  // needed. Empty: exclusive to the engine's family.
  std::vector<uint32_t> shared_queue_families;
};

struct MemoryStats {
  uint64_t blocks = 0;
  uint64_t reserved_bytes = 0;  // in blocks
  uint64_t used_bytes = 0;      // handed out
  uint64_t peak_used_bytes = 0;
};

class Allocator {
 public:
  Allocator(VkDevice device, const DeviceInfo& info, std::string device_label,
            const AllocatorOptions& options = {});
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // `what` names the allocation in errors ("attention scores", "staging", ...).
  Buffer allocate(VkDeviceSize bytes, MemoryKind kind, const std::string& what);
  MemoryStats stats(MemoryKind kind) const;
  // Bytes in blocks of both kinds: what the engine holds, and what limit_bytes caps.
  uint64_t reserved_bytes() const { return stats_[0].reserved_bytes + stats_[1].reserved_bytes; }
  VkDeviceSize limit_bytes() const { return limit_bytes_; }
  VkDeviceSize block_bytes() const { return block_bytes_; }
  VkDeviceSize alignment() const { return alignment_; }

 private:
  friend class Buffer;
  struct Block {
    MemoryKind kind;
    VkDeviceSize size = 0;
    OwnedMemory memory;
    OwnedBuffer buffer;
    std::byte* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, coalesced
  };
  void release(uint32_t block, VkDeviceSize offset, VkDeviceSize size);
  uint32_t create_block(VkDeviceSize size, MemoryKind kind, const std::string& what);
  uint32_t memory_type(MemoryKind kind, uint32_t type_bits) const;
  std::string free_memory_report(uint32_t heap) const;

  VkDevice device_;
  DeviceInfo info_;
  std::string label_;
  VkPhysicalDeviceMemoryProperties mem_props_{};
  VkDeviceSize block_bytes_ = 0;
  VkDeviceSize alignment_ = 256;
  VkDeviceSize limit_bytes_ = 0;
  std::vector<uint32_t> families_;  // the engine's queue family, then the shared ones
  std::vector<std::unique_ptr<Block>> blocks_;
  MemoryStats stats_[2];
};

}  // namespace vkf
