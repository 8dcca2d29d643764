#include "reference/topk.h"

#include <algorithm>
#include <numeric>

namespace vkf::ref {

TopKResult topk(const std::vector<float>& x, uint32_t rows, uint32_t n, uint32_t k) {
  TopKResult r;
  r.values.reserve(size_t{rows} * k);
  r.indices.reserve(size_t{rows} * k);
  std::vector<uint32_t> idx(n);
  for (uint32_t row = 0; row < rows; ++row) {
    const float* v = x.data() + size_t{row} * n;
    std::iota(idx.begin(), idx.end(), 0u);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](uint32_t a, uint32_t b) {
      return v[a] > v[b] || (v[a] == v[b] && a < b);
    });
    for (uint32_t j = 0; j < k; ++j) {
      r.values.push_back(v[idx[j]]);
      r.indices.push_back(idx[j]);
    }
  }
  return r;
}

}  // namespace vkf::ref
