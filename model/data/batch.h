#pragma once
// Batch: one padded training batch, laid out row-major as the model uploads it.
#include <cstdint>
#include <vector>

namespace vkf::model {

struct Batch {
  int batch_size = 0;                // B
  int src_len = 0;                   // Ls: the source bucket length
  int tgt_len = 0;                   // Lt: the target bucket length
  std::vector<int32_t> src;          // [B, Ls]  pieces + EOS, then pad
  std::vector<int32_t> tgt_in;       // [B, Lt]  BOS + pieces, then pad (decoder input)
  std::vector<int32_t> tgt_out;      // [B, Lt]  pieces + EOS, then pad (what the loss predicts)
  std::vector<int32_t> src_lengths;  // [B]  non-pad tokens per source row
  std::vector<int32_t> tgt_lengths;  // [B]  non-pad tokens per target row (same for in and out)
  int64_t src_tokens = 0;            // sum of src_lengths
  int64_t tgt_tokens = 0;            // sum of tgt_lengths: the number of tokens the loss counts
  std::vector<uint32_t> examples;    // [B]  index of each row in the ExampleStore
};

}  // namespace vkf::model
