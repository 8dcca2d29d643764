#include "engine/exchange/shared_host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "engine/error.h"

namespace vkf {

bool SharedHostMemory::supported(const std::vector<Device*>& devices) {
  if (devices.empty()) return false;
  for (const Device* d : devices)
    if (!d->info().external_memory_host || d->info().host_pointer_alignment == 0) return false;
  return true;
}

SharedHostMemory::SharedHostMemory(const std::vector<Device*>& devices, uint64_t bytes) {
  if (!supported(devices))
    throw Error("shared host memory needs VK_EXT_external_memory_host on every device");
  uint64_t align = 4096;
  for (const Device* d : devices) align = std::max(align, d->info().host_pointer_alignment);
  bytes_ = std::max<uint64_t>((bytes + align - 1) / align * align, align);
  host_ = static_cast<std::byte*>(std::aligned_alloc(align, bytes_));
  if (!host_) throw OutOfMemoryError("out of host memory: " + format_bytes(bytes_) + " to share");
  std::memset(host_, 0, bytes_);
  try {
    for (Device* d : devices) {
      const VkDevice dev = d->handle();
      auto host_pointer_properties = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
          vkGetDeviceProcAddr(dev, "vkGetMemoryHostPointerPropertiesEXT"));
      if (!host_pointer_properties)
        throw Error("vkGetMemoryHostPointerPropertiesEXT is missing on " + d->label());
      VkMemoryHostPointerPropertiesEXT pointer{
          VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
      check(host_pointer_properties(dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                    host_, &pointer),
            "querying host memory import on " + d->label());

      VkExternalMemoryBufferCreateInfo external{
          VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
      external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
      VkBufferCreateInfo binfo{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
      binfo.pNext = &external;
      binfo.size = bytes_;
      // Copies only: no storage-buffer binding, so no binding-range limit applies.
      binfo.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
      binfo.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
      VkBuffer buffer = VK_NULL_HANDLE;
      check(vkCreateBuffer(dev, &binfo, nullptr, &buffer),
            "creating a shared host buffer on " + d->label());
      Import imp;
      imp.buffer = OwnedBuffer(dev, buffer);
      VkMemoryRequirements req;
      vkGetBufferMemoryRequirements(dev, buffer, &req);
      const uint32_t types = req.memoryTypeBits & pointer.memoryTypeBits;
      if (types == 0)
        throw Error("no memory type of " + d->label() + " can hold imported host memory");
      VkImportMemoryHostPointerInfoEXT import{
          VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
      import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
      import.pHostPointer = host_;
      // The host reads and writes through its own pointer: take a coherent type where offered.
      VkPhysicalDeviceMemoryProperties props;
      vkGetPhysicalDeviceMemoryProperties(d->info().physical, &props);
      const VkMemoryPropertyFlags coherent =
          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      uint32_t type = uint32_t(__builtin_ctz(types));
      for (uint32_t t = 0; t < props.memoryTypeCount; ++t)
        if ((types & (1u << t)) && (props.memoryTypes[t].propertyFlags & coherent) == coherent) {
          type = t;
          break;
        }
      VkMemoryAllocateInfo ainfo{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      ainfo.pNext = &import;
      ainfo.allocationSize = bytes_;
      ainfo.memoryTypeIndex = type;
      VkDeviceMemory memory = VK_NULL_HANDLE;
      check(vkAllocateMemory(dev, &ainfo, nullptr, &memory),
            "importing " + format_bytes(bytes_) + " of host memory into " + d->label());
      imp.memory = OwnedMemory(dev, memory);
      check(vkBindBufferMemory(dev, buffer, memory, 0), "binding imported memory on " + d->label());
      imports_.push_back(std::move(imp));
    }
  } catch (...) {
    imports_.clear();
    std::free(host_);
    throw;
  }
}

SharedHostMemory::~SharedHostMemory() {
  imports_.clear();
  std::free(host_);
}

BufferRef SharedHostMemory::on_device(size_t i) const {
  return {imports_.at(i).buffer.get(), 0, bytes_, host_};
}

}  // namespace vkf
