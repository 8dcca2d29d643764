#pragma once
// Helpers for the tests of the f16-storage kernel variants: host values as the device stores
// them and buffers of either storage type (tests/support/bare_device.h has the device without
// 16-bit storage for the refusals).
#include <cstddef>
#include <vector>

#include "engine/engine.h"
#include "reference/stored.h"

namespace vkf::test {

// False (with a warning) when test::device() has no 16-bit storage: the f16 tests then pass
// without running.
bool has_storage16();

// Values as stored, random inputs, uploads and downloads in either type: reference/stored.h,
// shared with `vkf bench` and the tuner.
using ref::download_stored;
using ref::stored;
using ref::upload_stored;

// A value no kernel writes, representable in t (f16 cannot hold k_poison).
float poison(DType t);

}  // namespace vkf::test
