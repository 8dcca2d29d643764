#pragma once
// The reference for top-k (engine/ops/topk.h): selection is exact, so it is a stable sort,
// the k largest of each row by (value descending, index ascending).
#include <cstdint>
#include <vector>

namespace vkf::ref {

struct TopKResult {
  std::vector<float> values;      // [rows, k]
  std::vector<uint32_t> indices;  // [rows, k]
};
TopKResult topk(const std::vector<float>& x, uint32_t rows, uint32_t n, uint32_t k);

}  // namespace vkf::ref
