#pragma once
// One host allocation that several devices copy to and from directly: it is imported into each
// device as a buffer with VK_EXT_external_memory_host, so the bytes one device writes there are
// the bytes another reads, with no copy between per-device staging buffers. The gradient
// exchange uses it where every replica's device has the extension (lavapipe, most desktop
// drivers); elsewhere it falls back to per-device host-visible staging.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/device.h"
#include "engine/handles.h"
#include "engine/memory.h"

namespace vkf {

class SharedHostMemory {
 public:
  // True when every device can import host memory.
  static bool supported(const std::vector<Device*>& devices);

  // `bytes` (rounded up to the devices' import alignment), zeroed. Throws vkf::Error when a device
  // cannot import it.
  SharedHostMemory(const std::vector<Device*>& devices, uint64_t bytes);
  ~SharedHostMemory();
  SharedHostMemory(const SharedHostMemory&) = delete;
  SharedHostMemory& operator=(const SharedHostMemory&) = delete;

  std::byte* data() const { return host_; }
  uint64_t size() const { return bytes_; }
  // The whole allocation as device `i`'s buffer (mapped = data()), for copies (transfer usage).
  BufferRef on_device(size_t i) const;

 private:
  struct Import {
    OwnedMemory memory;
    OwnedBuffer buffer;  // destroyed before its memory is freed
  };
  std::byte* host_ = nullptr;
  uint64_t bytes_ = 0;
  std::vector<Import> imports_;  // destroyed before host_ is freed
};

}  // namespace vkf
