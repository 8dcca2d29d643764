#pragma once
// Embedding lookup with positions and dropout:
//   out[t, :] = dropout(table[token[t], :] * scale + PE[pos(t), :])
// PE is the interleaved sinusoid of "Attention Is All You Need" (computed in the kernel) or a
// learned [max_len, d] table. Padding tokens give zero rows. The backward is a deterministic
// scatter-add (device counting sort, no float atomics) that accumulates into the table's
// gradient, which the pre-softmax projection shares. Kernels: shaders/embedding_{fwd,bwd}.comp.
// The activations may be stored as fp16 (devices with 16-bit storage): the forward's out and the
// backward's dout. The forward may read the token table as fp16 too (table_dtype: a model's fp16
// weights). The position table, the gradients and all arithmetic stay fp32.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

struct EmbeddingForwardArgs {
  DType dtype = DType::f32;        // storage of out: f32 or f16
  BufferRef tokens;                // [tokens] int32 ids
  BufferRef positions;             // [tokens] int32, used when len == 0
  BufferRef table;                 // [vocab, d] of table_dtype
  DType table_dtype = DType::f32;  // f32, or f16 (devices with 16-bit storage)
  BufferRef pos_table;             // [max_len, d] f32 learned positions; invalid = sinusoid
  BufferRef out;                   // [tokens, d] of dtype
  BufferRef step;                  // StepScalars (seed, step); needed only when dropout > 0
  uint32_t tokens_count = 0;
  uint32_t d = 0;
  uint32_t vocab = 0;
  // > 0: tokens are [batch, len], pos = t % len, and the dropout mask is that of the batch's
  // place in the step's whole batch (StepScalars::dropout_row); 0: use positions.
  uint32_t len = 0;
  uint32_t max_len = 0;  // rows of pos_table (learned positions only)
  int32_t pad_id = -1;   // this id gives a zero row; -1 = none
  float scale = 1.0f;    // sqrt(d_model) in the paper
  float dropout = 0.0f;
  uint32_t tensor_id = 0;
};

struct EmbeddingBackwardArgs {
  DType dout_dtype = DType::f32;  // storage of dout: f32 or f16 (the forward's dtype)
  BufferRef tokens;               // [tokens] int32, as in the forward
  BufferRef positions;            // [tokens] int32, as in the forward
  BufferRef dout;                 // [tokens, d] of dout_dtype, gradient of out
  BufferRef dtable;               // [vocab, d] f32, accumulated: dtable += ...
  BufferRef dpos_table;  // [max_len, d] f32, accumulated, learned positions only; invalid = none
  BufferRef scratch;     // embedding_backward_scratch_bytes(...) bytes
  BufferRef step;        // as in the forward
  uint32_t tokens_count = 0;
  uint32_t d = 0;
  uint32_t vocab = 0;
  uint32_t len = 0;
  uint32_t max_len = 0;
  int32_t pad_id = -1;
  float scale = 1.0f;
  float dropout = 0.0f;
  uint32_t tensor_id = 0;
};

void embedding_forward(Device& dev, Recorder& rec, const EmbeddingForwardArgs& a);
void embedding_backward(Device& dev, Recorder& rec, const EmbeddingBackwardArgs& a);

// Scratch for the sort: counts, offsets and cursors per key, two token lists.
uint64_t embedding_backward_scratch_bytes(uint32_t vocab, uint32_t max_len, uint32_t tokens);

}  // namespace vkf::ops
