#pragma once
// Helpers for the tests of the f16-storage kernel variants: host values as the device stores
// them and buffers of either storage type (tests/support/bare_device.h has the device without
// 16-bit storage for the refusals).
#include <cstddef>
#include <vector>

#include "engine/engine.h"

namespace vkf::test {

// False (with a warning) when test::device() has no 16-bit storage: the f16 tests then pass
// without running.
bool has_storage16();

// v as the device stores it in t: f16 rounds each value to nearest even, f32 keeps it.
std::vector<float> stored(std::vector<float> v, DType t);

// A value no kernel writes, representable in t (f16 cannot hold k_poison).
float poison(DType t);

// A buffer of exactly v.size() elements of t (at least one), so that the ops' size checks are
// exercised; upload_as overwrites an existing one.
Buffer upload_as(Device& dev, const std::vector<float>& v, DType t, const char* what);
void upload_as(Device& dev, const BufferRef& b, const std::vector<float>& v, DType t);
std::vector<float> download_as(Device& dev, const BufferRef& b, size_t n, DType t);

}  // namespace vkf::test
