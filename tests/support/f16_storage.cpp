#include "tests/support/f16_storage.h"

#include "tests/support/vk_test.h"

namespace vkf::test {

bool has_storage16() {
  if (device().info().storage16) return true;
  WARN(device().label() << " has no 16-bit storage: the f16 variant is not tested");
  return false;
}

float poison(DType t) {
  // -65504, the lowest finite f16, is no output of the tests' inputs either.
  return t == DType::f16 ? -65504.0f : k_poison;
}

}  // namespace vkf::test
