#include "engine/memory.h"

#include <algorithm>
#include <utility>

#include "engine/error.h"

namespace vkf {
namespace {
VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
  return (v + a - 1) / a * a;
}
}  // namespace

BufferRef BufferRef::slice(VkDeviceSize byte_offset, VkDeviceSize bytes) const {
  if (byte_offset + bytes > size)
    throw Error("BufferRef::slice: range [" + std::to_string(byte_offset) + ", " +
                std::to_string(byte_offset + bytes) + ") is outside a buffer of " +
                std::to_string(size) + " bytes");
  return {buffer, offset + byte_offset, bytes, mapped ? mapped + byte_offset : nullptr};
}

Buffer::Buffer(Buffer&& o) noexcept
    : allocator_(std::exchange(o.allocator_, nullptr)),
      block_(o.block_),
      reserved_(o.reserved_),
      ref_(std::exchange(o.ref_, {})) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    allocator_ = std::exchange(o.allocator_, nullptr);
    block_ = o.block_;
    reserved_ = o.reserved_;
    ref_ = std::exchange(o.ref_, {});
  }
  return *this;
}

Buffer::~Buffer() {
  reset();
}

void Buffer::reset() {
  if (allocator_ != nullptr && ref_.valid()) allocator_->release(block_, ref_.offset, reserved_);
  allocator_ = nullptr;
  ref_ = {};
}

Allocator::Allocator(VkDevice device, const DeviceInfo& info, std::string device_label,
                     const AllocatorOptions& options)
    : device_(device),
      info_(info),
      label_(std::move(device_label)),
      limit_bytes_(options.limit_bytes) {
  vkGetPhysicalDeviceMemoryProperties(info.physical, &mem_props_);
  alignment_ = std::max<VkDeviceSize>(256, info.min_storage_offset_alignment);
  VkDeviceSize limit = std::min<VkDeviceSize>(info.max_allocation_bytes, info.max_buffer_bytes);
  limit = std::min<VkDeviceSize>(limit, info.max_storage_buffer_range);
  families_.push_back(info.compute_queue_family);
  for (uint32_t f : options.shared_queue_families)
    if (std::find(families_.begin(), families_.end(), f) == families_.end()) families_.push_back(f);
  VkDeviceSize heap = info.device_local_bytes();
  VkDeviceSize wanted = options.block_bytes ? options.block_bytes : (256ull << 20);
  if (!options.block_bytes && heap) wanted = std::min<VkDeviceSize>(wanted, heap / 4);
  // Under a cap, a quarter of it at most: one block of each kind must not take all of it.
  if (limit_bytes_) wanted = std::min<VkDeviceSize>(wanted, limit_bytes_ / 4);
  block_bytes_ =
      std::max<VkDeviceSize>(alignment_, std::min(wanted, limit) / alignment_ * alignment_);
}

Allocator::~Allocator() = default;

uint32_t Allocator::memory_type(MemoryKind kind, uint32_t type_bits) const {
  VkMemoryPropertyFlags need =
      kind == MemoryKind::device
          ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
          : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  // Host memory for read-back is much faster when cached; take it where it exists.
  VkMemoryPropertyFlags prefer =
      kind == MemoryKind::host ? need | VK_MEMORY_PROPERTY_HOST_CACHED_BIT : need;
  for (VkMemoryPropertyFlags flags : {prefer, need})
    for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i)
      if ((type_bits & (1u << i)) && (mem_props_.memoryTypes[i].propertyFlags & flags) == flags)
        return i;
  if (kind == MemoryKind::device)  // e.g. some CPU drivers: any type will do
    for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i)
      if (type_bits & (1u << i)) return i;
  throw Error("no suitable Vulkan memory type for " +
              std::string(kind == MemoryKind::device ? "device-local" : "host-visible") +
              " memory on " + label_);
}

std::string Allocator::free_memory_report(uint32_t heap) const {
  uint64_t used = stats_[0].reserved_bytes + stats_[1].reserved_bytes;
  std::string s = "heap " + std::to_string(heap) + " holds " +
                  format_bytes(mem_props_.memoryHeaps[heap].size) + ", vkformer has " +
                  format_bytes(used) + " in blocks";
  if (info_.memory_budget) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    props.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(info_.physical, &props);
    uint64_t free_bytes = budget.heapBudget[heap] > budget.heapUsage[heap]
                              ? budget.heapBudget[heap] - budget.heapUsage[heap]
                              : 0;
    s += ", about " + format_bytes(free_bytes) + " free";
  }
  return s;
}

uint32_t Allocator::create_block(VkDeviceSize size, MemoryKind kind, const std::string& what) {
  auto block = std::make_unique<Block>();
  block->kind = kind;
  block->size = size;

  VkBufferCreateInfo binfo{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  binfo.size = size;
  binfo.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  binfo.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (families_.size() > 1) {
    binfo.sharingMode = VK_SHARING_MODE_CONCURRENT;
    binfo.queueFamilyIndexCount = static_cast<uint32_t>(families_.size());
    binfo.pQueueFamilyIndices = families_.data();
  }
  VkBuffer buffer = VK_NULL_HANDLE;
  check(vkCreateBuffer(device_, &binfo, nullptr, &buffer),
        "creating a " + format_bytes(size) + " buffer for " + what + " on " + label_);
  block->buffer = OwnedBuffer(device_, buffer);

  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, buffer, &req);
  uint32_t type = memory_type(kind, req.memoryTypeBits);
  uint32_t heap = mem_props_.memoryTypes[type].heapIndex;
  if (req.size > mem_props_.memoryHeaps[heap].size)
    throw OutOfMemoryError("out of device memory on " + label_ + ": " + what + " asked for " +
                           format_bytes(req.size) + " but " + free_memory_report(heap));

  VkMemoryAllocateInfo ainfo{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ainfo.allocationSize = req.size;
  ainfo.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkResult r = vkAllocateMemory(device_, &ainfo, nullptr, &memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw OutOfMemoryError("out of device memory on " + label_ + ": " + what + " asked for " +
                           format_bytes(req.size) + "; " + free_memory_report(heap));
  check(r, "allocating " + format_bytes(req.size) + " for " + what + " on " + label_);
  block->memory = OwnedMemory(device_, memory);
  check(vkBindBufferMemory(device_, buffer, memory, 0), "binding memory on " + label_);
  if (kind == MemoryKind::host) {
    void* p = nullptr;
    check(vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &p), "mapping memory on " + label_);
    block->mapped = static_cast<std::byte*>(p);
  }
  block->free[0] = size;
  auto& st = stats_[static_cast<int>(kind)];
  st.blocks++;
  st.reserved_bytes += size;
  blocks_.push_back(std::move(block));
  return static_cast<uint32_t>(blocks_.size() - 1);
}

Buffer Allocator::allocate(VkDeviceSize bytes, MemoryKind kind, const std::string& what) {
  if (bytes == 0) bytes = 4;  // a zero-size descriptor range is invalid; keep one word
  VkDeviceSize need = align_up(bytes, alignment_);
  VkDeviceSize limit = std::min<VkDeviceSize>(info_.max_allocation_bytes, info_.max_buffer_bytes);
  limit = std::min<VkDeviceSize>(limit, info_.max_storage_buffer_range);
  if (need > limit)
    throw OutOfMemoryError("cannot allocate " + format_bytes(bytes) + " for " + what + " on " +
                           label_ + ": larger than the device's largest buffer (" +
                           format_bytes(limit) + ")");
  auto try_block = [&](uint32_t bi, Buffer& out) {
    Block& b = *blocks_[bi];
    if (b.kind != kind) return false;
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < need) continue;
      VkDeviceSize off = it->first, sz = it->second;
      b.free.erase(it);
      if (sz > need) b.free[off + need] = sz - need;
      out.allocator_ = this;
      out.block_ = bi;
      out.reserved_ = need;
      out.ref_ = {b.buffer.get(), off, bytes, b.mapped ? b.mapped + off : nullptr};
      return true;
    }
    return false;
  };
  Buffer out;
  bool done = false;
  for (uint32_t bi = 0; bi < blocks_.size() && !done; ++bi)
    if (blocks_[bi]) done = try_block(bi, out);
  if (!done) {
    VkDeviceSize size = std::max(need, block_bytes_);
    if (limit_bytes_) {
      const uint64_t taken = reserved_bytes();
      const uint64_t left = limit_bytes_ > taken ? limit_bytes_ - taken : 0;
      if (need > left)
        throw OutOfMemoryError("vkformer's memory cap of " + format_bytes(limit_bytes_) + " on " +
                               label_ + " refuses " + format_bytes(bytes) + " for " + what + ": " +
                               format_bytes(taken) + " taken, " + format_bytes(left) + " left");
      size = std::min<VkDeviceSize>(size, left / alignment_ * alignment_);  // still >= need
    }
    uint32_t bi = create_block(size, kind, what);
    done = try_block(bi, out);
  }
  auto& st = stats_[static_cast<int>(kind)];
  st.used_bytes += need;
  st.peak_used_bytes = std::max(st.peak_used_bytes, st.used_bytes);
  return out;
}

void Allocator::release(uint32_t block, VkDeviceSize offset, VkDeviceSize size) {
  Block& b = *blocks_[block];
  stats_[static_cast<int>(b.kind)].used_bytes -= size;
  auto [it, inserted] = b.free.emplace(offset, size);
  // Coalesce with the neighbours so large allocations can reuse freed space.
  auto next = std::next(it);
  if (next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
    }
  }
}

MemoryStats Allocator::stats(MemoryKind kind) const {
  return stats_[static_cast<int>(kind)];
}

}  // namespace vkf
