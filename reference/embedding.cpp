#include "reference/embedding.h"

#include <cmath>

namespace vkf::ref {
namespace {

bool valid_token(const EmbeddingShape& s, int32_t id) {
  return id != s.pad_id && id >= 0 && uint32_t(id) < s.vocab;
}

int64_t position_of(const EmbeddingShape& s, const std::vector<int32_t>& positions, uint32_t t) {
  return s.len ? int64_t{t % s.len} : int64_t{positions[t]};
}

}  // namespace

double sinusoid(uint32_t pos, uint32_t c, uint32_t d) {
  double angle = pos / std::pow(10000.0, double(c & ~1u) / d);
  return (c & 1u) ? std::cos(angle) : std::sin(angle);
}

std::vector<double> embedding_forward(const EmbeddingShape& s, const std::vector<int32_t>& tokens,
                                      const std::vector<int32_t>& positions,
                                      const std::vector<double>& table,
                                      const std::vector<double>& pos_table,
                                      const std::vector<double>& mask) {
  std::vector<double> out(size_t{s.tokens} * s.d, 0.0);
  for (uint32_t t = 0; t < s.tokens; ++t) {
    if (!valid_token(s, tokens[t])) continue;
    int64_t pos = position_of(s, positions, t);
    for (uint32_t c = 0; c < s.d; ++c) {
      double pe = 0;
      if (pos >= 0 && pos_table.empty()) pe = sinusoid(uint32_t(pos), c, s.d);
      if (pos >= 0 && !pos_table.empty() && pos < s.max_len) pe = pos_table[pos * s.d + c];
      size_t i = size_t{t} * s.d + c;
      out[i] = (table[size_t(tokens[t]) * s.d + c] * s.scale + pe) * (mask.empty() ? 1 : mask[i]);
    }
  }
  return out;
}

void embedding_backward(const EmbeddingShape& s, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& positions, const std::vector<double>& dout,
                        const std::vector<double>& mask, std::vector<double>& dtable,
                        std::vector<double>* dpos_table) {
  for (uint32_t t = 0; t < s.tokens; ++t) {
    if (!valid_token(s, tokens[t])) continue;
    int64_t pos = position_of(s, positions, t);
    for (uint32_t c = 0; c < s.d; ++c) {
      size_t i = size_t{t} * s.d + c;
      double g = dout[i] * (mask.empty() ? 1 : mask[i]);
      dtable[size_t(tokens[t]) * s.d + c] += g * s.scale;
      if (dpos_table && pos >= 0 && pos < s.max_len) (*dpos_table)[pos * s.d + c] += g;
    }
  }
}

}  // namespace vkf::ref
