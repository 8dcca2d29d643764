#pragma once
// Fused scaled dot-product attention, flash-attention style (no len_q x len_k matrix in device
// memory): O = dropout(softmax(Q K^T * scale + mask)) V, with a key-padding mask given as
// per-batch key lengths, an optional causal mask and optional per-batch query lengths. The
// forward saves the per-row log-sum-exp; the backward recomputes the weights from it
// (FlashAttention-2) and is deterministic. Kernels: shaders/attention_forward.comp and
// shaders/attention_backward_{delta,kv,q}.comp.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

// Where element (b, h, i, d) of a [batch, heads, len, d] view lives, in elements from the
// buffer's start: b * batch_stride + h * head_stride + i * row_stride + d. All zero = contiguous
// [batch, heads, len, d]. A row-major [batch, len, heads * d] tensor (a projection's output) is
// {len * heads * d, d, heads * d}.
struct AttentionLayout {
  uint32_t batch_stride = 0;
  uint32_t head_stride = 0;
  uint32_t row_stride = 0;
};

// Tile configuration (specialization constants); 0 = the device's default. Tests force each.
struct AttentionTiles {
  uint32_t workgroup = 0;  // threads per workgroup
  uint32_t block_q = 0;    // query rows per tile
  uint32_t block_k = 0;    // key rows per tile
};

struct AttentionArgs {
  uint32_t batch = 0, heads = 0, len_q = 0, len_k = 0;
  uint32_t d_k = 0;          // head dim of Q and K, 1..128
  uint32_t d_v = 0;          // head dim of V and O, 1..128
  DType dtype = DType::f32;  // storage of q, k, v, o (and their gradients): f32 or f16
  BufferRef q;               // q: [batch, heads, len_q, d_k] through q_layout
  BufferRef k;               // k: [batch, heads, len_k, d_k] through k_layout
  BufferRef v;               // v: [batch, heads, len_k, d_v] through v_layout
  BufferRef o;               // o (written): [batch, heads, len_q, d_v] through o_layout
  AttentionLayout q_layout, k_layout, v_layout, o_layout;
  BufferRef lse;           // lse (written by the forward): [batch, heads, len_q] f32, contiguous
  BufferRef key_len;       // optional int32 [batch]: keys j >= key_len[b] are masked
  BufferRef q_len;         // optional int32 [batch]: rows i >= q_len[b] give zeros (O, dQ)
  bool causal = false;     // key j > query i is masked
  float scale = 0.0f;      // multiplies Q K^T; 0 = 1/sqrt(d_k)
  float dropout_p = 0.0f;  // dropout probability on the attention weights
  uint32_t dropout_tensor = 0;  // Philox tensor id of this attention's mask
  BufferRef scalars;            // StepScalars (seed, step); required when dropout_p > 0
  AttentionTiles tiles;         // forward kernel's tiles
};

struct AttentionBackwardArgs {
  AttentionArgs fwd;        // exactly the forward's arguments (o and lse as it wrote them)
  BufferRef d_o;            // d_o: like o (o_layout)
  BufferRef d_q;            // d_q (written): like q (q_layout)
  BufferRef d_k;            // d_k (written): like k (k_layout)
  BufferRef d_v;            // d_v (written): like v (v_layout)
  BufferRef delta;          // workspace: [batch, heads, len_q] f32
  AttentionTiles tiles_kv;  // dK/dV kernel's tiles
  AttentionTiles tiles_q;   // dQ kernel's tiles
};

enum class AttentionKernel { forward, backward_kv, backward_q };

// The tiles `kernel` uses on `info` for these head dims when none are forced.
AttentionTiles attention_default_tiles(const DeviceInfo& info, AttentionKernel kernel, uint32_t d_k,
                                       uint32_t d_v);
// Shared memory `kernel` needs with `tiles`, in bytes.
uint32_t attention_shared_bytes(AttentionKernel kernel, const AttentionTiles& tiles, uint32_t d_k,
                                uint32_t d_v);

void attention_forward(Device& dev, Recorder& rec, const AttentionArgs& args);
void attention_backward(Device& dev, Recorder& rec, const AttentionBackwardArgs& args);

}  // namespace vkf::ops
