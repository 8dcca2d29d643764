#include "bench/tune/check_io.h"

#include <cmath>
#include <sstream>

#include "tests/reference/matmul.h"

namespace vkf::tune {

std::vector<float> random_stored(std::mt19937& rng, size_t n, DType t, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = t == DType::f16 ? ref::round_half(d(rng)) : d(rng);
  return v;
}

void upload_stored(Device& dev, const BufferRef& b, const std::vector<float>& v, DType t) {
  if (t == DType::f32) return dev.upload(b, v);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = ref::to_half(v[i]);
  dev.upload(b, h);
}

std::vector<float> download_stored(Device& dev, const BufferRef& b, size_t n, DType t) {
  if (t == DType::f32) return dev.download<float>(b, n);
  const std::vector<uint16_t> h = dev.download<uint16_t>(b, n);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = ref::from_half(h[i]);
  return v;
}

void poison(Device& dev, const BufferRef& b, size_t count, DType t) {
  if (t == DType::f16)
    dev.upload(b, std::vector<uint16_t>(count, 0x7e00));
  else
    dev.upload(b, std::vector<uint32_t>(count, 0x7fc0dead));
}

std::string first_wrong(const std::string& what, const std::vector<float>& got,
                        const std::vector<double>& want, double atol, double rtol) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= atol + rtol * std::fabs(want[i]))) {  // NaN fails too
      std::ostringstream why;
      why << what << " wrong at element " << i << ": got " << got[i] << ", want " << want[i];
      return why.str();
    }
  }
  return "";
}

}  // namespace vkf::tune
