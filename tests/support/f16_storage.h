#pragma once
// Helpers for the tests of the f16-storage kernel variants (tests/support/bare_device.h has the
// device without 16-bit storage for the refusals). Host values as the device stores them, random
// inputs, uploads, downloads and the NaN poison in either type are reference/stored.h's, shared
// with `vkf bench` and the tuner.
#include "engine/engine.h"

namespace vkf::test {

// False (with a warning) when test::device() has no 16-bit storage: the f16 tests then pass
// without running.
bool has_storage16();

// A finite value no kernel writes, representable in t (f16 cannot hold k_poison), for the tests
// that compare what was left unwritten with it as a value.
float poison(DType t);

}  // namespace vkf::test
