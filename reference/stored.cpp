#include "reference/stored.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reference/matmul.h"  // to_half, from_half

namespace vkf::ref {

std::vector<float> stored(std::vector<float> v, DType t) {
  if (t == DType::f16)
    for (float& x : v) x = round_half(x);
  return v;
}

std::vector<float> random_stored(std::mt19937& rng, size_t n, DType t, float lo, float hi) {
  return stored(uniform(rng, n, lo, hi), t);
}

std::vector<float> uniform(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<uint16_t> to_halves(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = to_half(v[i]);
  return h;
}

std::vector<float> from_halves(const std::vector<uint16_t>& h) {
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = from_half(h[i]);
  return v;
}

void upload_stored(Device& dev, const BufferRef& b, const std::vector<float>& v, DType t) {
  if (t == DType::f32)
    dev.upload(b, v);
  else
    dev.upload(b, to_halves(v));
}

Buffer upload_stored(Device& dev, const std::vector<float>& v, DType t, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(v.size(), 1) * dtype_bytes(t), what);
  upload_stored(dev, b, v, t);
  return b;
}

std::vector<float> download_stored(Device& dev, const BufferRef& b, size_t n, DType t) {
  if (t == DType::f32) return dev.download<float>(b, n);
  return from_halves(dev.download<uint16_t>(b, n));
}

void poison(Device& dev, const BufferRef& b, size_t count, DType t) {
  if (t == DType::f16)
    dev.upload(b, std::vector<uint16_t>(count, k_poison_half));
  else
    dev.upload(b, std::vector<uint32_t>(count, k_poison_bits));
}

std::string first_wrong(const std::string& what, const std::vector<float>& got,
                        const std::vector<double>& want, double atol, double rtol) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!within(got[i], want[i], std::fabs(want[i]), atol, rtol)) {
      std::ostringstream why;
      why << what << " wrong at element " << i << ": got " << got[i] << ", want " << want[i];
      return why.str();
    }
  }
  return "";
}

}  // namespace vkf::ref
