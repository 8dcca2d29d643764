#pragma once
// Double-precision CPU references for the embedding lookup with positions and dropout.
#include <cstdint>
#include <vector>

namespace vkf::ref {

struct EmbeddingShape {
  uint32_t tokens = 0;
  uint32_t d = 0;
  uint32_t vocab = 0;
  uint32_t len = 0;      // > 0: pos = t % len; 0: positions[t]
  uint32_t max_len = 0;  // rows of a learned position table
  int32_t pad_id = -1;
  double scale = 1.0;
};

// The paper's interleaved sinusoid: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos.
double sinusoid(uint32_t pos, uint32_t c, uint32_t d);

// out: [tokens, d]. table: [vocab, d]; pos_table: [max_len, d] or empty (sinusoid);
// mask: [tokens, d] dropout scales or empty. Pad and out-of-range ids give zero rows.
std::vector<double> embedding_forward(const EmbeddingShape& s, const std::vector<int32_t>& tokens,
                                      const std::vector<int32_t>& positions,
                                      const std::vector<double>& table,
                                      const std::vector<double>& pos_table,
                                      const std::vector<double>& mask);

// Gradients of sum(dout * out): dtable [vocab, d] and dpos_table [max_len, d] (learned only),
// each added to the given initial value.
void embedding_backward(const EmbeddingShape& s, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& positions, const std::vector<double>& dout,
                        const std::vector<double>& mask, std::vector<double>& dtable,
                        std::vector<double>* dpos_table);

}  // namespace vkf::ref
