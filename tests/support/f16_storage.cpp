#include "tests/support/f16_storage.h"

#include <algorithm>
#include <cstdint>

#include "tests/reference/matmul.h"  // to_half, from_half
#include "tests/support/vk_test.h"

namespace vkf::test {

bool has_storage16() {
  if (device().info().storage16) return true;
  WARN(device().label() << " has no 16-bit storage: the f16 variant is not tested");
  return false;
}

std::vector<float> stored(std::vector<float> v, DType t) {
  if (t == DType::f16)
    for (float& x : v) x = ref::round_half(x);
  return v;
}

float poison(DType t) {
  // -65504, the lowest finite f16, is no output of the tests' inputs either.
  return t == DType::f16 ? -65504.0f : k_poison;
}

Buffer upload_as(Device& dev, const std::vector<float>& v, DType t, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(v.size(), 1) * dtype_bytes(t), what);
  upload_as(dev, b, v, t);
  return b;
}

void upload_as(Device& dev, const BufferRef& b, const std::vector<float>& v, DType t) {
  if (t == DType::f32) {
    dev.upload(b, v);
    return;
  }
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = ref::to_half(v[i]);
  dev.upload(b, h);
}

std::vector<float> download_as(Device& dev, const BufferRef& b, size_t n, DType t) {
  if (t == DType::f32) return dev.download<float>(b, n);
  auto h = dev.download<uint16_t>(b, n);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = ref::from_half(h[i]);
  return v;
}

}  // namespace vkf::test
