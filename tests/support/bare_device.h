#pragma once
// A device with no optional feature or extension enabled, for the tests of what the engine
// refuses or falls back from on such a device (f16 storage, shared host memory).
#include <memory>

#include "engine/engine.h"

namespace vkf::test {

// A device created on test::device()'s physical device with no optional feature enabled, and
// adopted (Device::adopt assumes none either): it reports no 16-bit storage.
class BareDevice {
 public:
  BareDevice();
  ~BareDevice();
  BareDevice(const BareDevice&) = delete;
  BareDevice& operator=(const BareDevice&) = delete;
  Device& get() { return *dev_; }

 private:
  VkDevice handle_ = VK_NULL_HANDLE;
  std::unique_ptr<Device> dev_;
};

}  // namespace vkf::test
