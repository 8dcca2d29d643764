#pragma once
// Fused scaled dot-product attention, flash-attention style (no len_q x len_k matrix in device
// memory): O = dropout(softmax(Q K^T * scale + mask)) V, with a key-padding mask given as
// per-batch key lengths, an optional causal mask and optional per-batch query lengths. The
// forward saves the per-row log-sum-exp; the backward recomputes the weights from it
// (FlashAttention-2) and is deterministic. Kernels: shaders/attention_forward.comp and
// shaders/attention_backward_{delta,kv,q}.comp (GPUs), shaders/attention_rows_*.comp (CPU
// devices; see AttentionPath).
#include <cstdint>
#include <string>

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

// Which kernels compute the attention (same arguments, same results up to rounding, the same
// dropout mask):
//   tiled: Q, K and V tiles staged in shared memory, flash-attention style (GPUs).
//   rows:  a workgroup is one subgroup whose lanes each own `rows` query rows (forward, dQ) or
//          key rows (dK/dV) in registers; the rows they share are gathered one per lane and
//          handed around by subgroup shuffles. No shared memory, no barrier: on CPU devices
//          (llvmpipe) a per-lane shared-memory access is a gather and a barrier a coroutine
//          switch, so the tiled kernels run 25-90x slower there. Kernels:
//          shaders/attention_rows_{forward,backward_q,backward_kv}.comp.
//   automatic: rows on CPU devices (DeviceInfo::is_cpu()), tiled elsewhere;
//          DeviceOptions::ops.attention_rows overrides that choice (not a forced one).
enum class AttentionPath : uint32_t { automatic, tiled, rows };

// Kernel configuration (specialization constants); 0 = the device's default. Tests force each.
struct AttentionTiles {
  uint32_t workgroup = 0;  // tiled: threads per workgroup
  uint32_t block_q = 0;    // tiled: query rows per tile
  uint32_t block_k = 0;    // tiled: key rows per tile
  AttentionPath path = AttentionPath::automatic;
  uint32_t rows = 0;  // rows path: rows per lane, 1..8 (the workgroup is one subgroup)
  // Rows path, backward kernels: unroll the loop over the subgroup's shared queries/keys (its
  // shuffles then take constant lanes). automatic = at subgroups of 16 lanes and more, where it
  // runs 1.8-2.3x faster on lavapipe; at 8 lanes the rolled loop is 10-25% faster.
  enum class Unroll : uint32_t { automatic, rolled, unrolled } unroll = Unroll::automatic;
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
  AttentionTiles tiles;         // forward kernel's path and tiles
};

struct AttentionBackwardArgs {
  AttentionArgs fwd;        // exactly the forward's arguments (o and lse as it wrote them)
  BufferRef d_o;            // d_o: like o (o_layout)
  BufferRef d_q;            // d_q (written): like q (q_layout)
  BufferRef d_k;            // d_k (written): like k (k_layout)
  BufferRef d_v;            // d_v (written): like v (v_layout)
  BufferRef delta;          // workspace: [batch, heads, len_q] f32
  AttentionTiles tiles_kv;  // dK/dV kernel's path and tiles
  AttentionTiles tiles_q;   // dQ kernel's path and tiles
};

enum class AttentionKernel { forward, backward_kv, backward_q };

// The configuration `kernel` uses on `info` for these head dims when none is forced: the path
// `automatic` resolves to, the tiled path's tiles and the rows path's rows per lane (the latter
// capped by the sequence length when the kernel runs) and query loop (unroll).
AttentionTiles attention_default_tiles(const DeviceInfo& info, AttentionKernel kernel, uint32_t d_k,
                                       uint32_t d_v);
// The rows path's default query loop (the backward kernels'; the forward is always unrolled).
AttentionTiles::Unroll attention_default_unroll(const DeviceInfo& info);
// Whether `info`'s driver compiles the rows kernels far more slowly than others (Mesa 25's
// lavapipe: minutes a kernel at d 64), so that the default takes 1 row a lane, rolled.
bool slow_rows_compiler(const DeviceInfo& info);
// Shared memory `kernel` needs with `tiles`, in bytes (0 on the rows path).
uint32_t attention_shared_bytes(AttentionKernel kernel, const AttentionTiles& tiles, uint32_t d_k,
                                uint32_t d_v);
// Why `info` cannot run `kernel` with the complete configuration `tiles` (path tiled or rows,
// no field left at 0), or "" when it can: for tuned configurations, which may come from a file.
std::string attention_tiles_misfit(const DeviceInfo& info, AttentionKernel kernel,
                                   const AttentionTiles& tiles, uint32_t d_k, uint32_t d_v);

void attention_forward(Device& dev, Recorder& rec, const AttentionArgs& args);
void attention_backward(Device& dev, Recorder& rec, const AttentionBackwardArgs& args);

}  // namespace vkf::ops
