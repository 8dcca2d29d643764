// Shared by the fused attention kernels (attention_forward.comp, attention_backward_*.comp):
// tile sizes as specialization constants, the push-constant block, strided indexing and the
// masks. The including shader enables GL_EXT_shader_16bit_storage itself when VKF_F16 is set.
#ifndef VKF_ATTENTION_COMMON_GLSL
#define VKF_ATTENTION_COMMON_GLSL

#include "philox.glsl"
#include "step.glsl"

// Storage type of Q, K, V, O and their gradients; LSE, delta and all arithmetic stay fp32.
#ifdef VKF_F16
#define ATT_T float16_t
#else
#define ATT_T float
#endif

// Inner reductions stay loops: fully unrolled (the default once tile sizes are specialised) they
// take llvmpipe minutes to compile. The accumulator loops over t are still unrolled so that the
// per-thread accumulators live in registers.
#define ATT_LOOP [[dont_unroll]]

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;  // threads per workgroup (same id as local_size_x)
layout(constant_id = 1) const uint BR = 32;  // query rows per tile
layout(constant_id = 2) const uint BC = 32;  // key rows per tile
layout(constant_id = 3) const uint DK = 64;  // head dim of Q and K
layout(constant_id = 4) const uint DV = 64;  // head dim of V and O
// K tiles are padded by one float so that threads reading different keys hit different banks.
const uint KSTR = DK + 1;

const uint F_CAUSAL = 1u;   // key j > query i is masked
const uint F_KEY_LEN = 2u;  // key_len[b] masks keys >= key_len[b]
const uint F_Q_LEN = 4u;    // q_len[b]: rows >= q_len[b] are zero in O and all gradients
const uint F_DROPOUT = 8u;  // dropout on the attention weights

// Strides are in elements; every tensor is indexed as b*batch + h*head + i*row + d.
// The gradients dQ, dK, dV, dO share the strides of Q, K, V, O.
layout(push_constant) uniform Push {
  uint batch, heads, len_q, len_k;
  uint q_bs, q_hs, q_rs;
  uint k_bs, k_hs, k_rs;
  uint v_bs, v_hs, v_rs;
  uint o_bs, o_hs, o_rs;
  float scale;      // multiplies Q K^T
  float dropout_p;  // probability of dropping an attention weight
  uint tensor_id;   // Philox tensor id of this attention's dropout mask
  uint flags;       // F_* bits
} pc;

uint q_at(uint b, uint h, uint i) { return b * pc.q_bs + h * pc.q_hs + i * pc.q_rs; }
uint k_at(uint b, uint h, uint j) { return b * pc.k_bs + h * pc.k_hs + j * pc.k_rs; }
uint v_at(uint b, uint h, uint j) { return b * pc.v_bs + h * pc.v_hs + j * pc.v_rs; }
uint o_at(uint b, uint h, uint i) { return b * pc.o_bs + h * pc.o_hs + i * pc.o_rs; }
// LSE and delta: [batch, heads, len_q] contiguous.
uint row_at(uint b, uint h, uint i) { return (b * pc.heads + h) * pc.len_q + i; }

#ifdef ATT_BINDING_LENGTHS
#ifdef VKF_TEXEL_TAIL
// The _texel variants of the backward kernels: the masks and the step scalars through uniform
// texel buffers (R32I, R32I and R32UI views), which no storage-buffer limit counts. dK/dV binds 8
// storage buffers of its own, and a device whose stages bind only 8 (Mesa's V3DV) has no room
// for three more. The including shader enables GL_EXT_samplerless_texture_functions.
layout(binding = ATT_BINDING_LENGTHS) uniform itextureBuffer key_len_texels;
layout(binding = ATT_BINDING_LENGTHS + 1) uniform itextureBuffer q_len_texels;
layout(binding = ATT_BINDING_LENGTHS + 2) uniform utextureBuffer step_texels;
int key_len_of(uint b) { return texelFetch(key_len_texels, int(b)).x; }
int q_len_of(uint b) { return texelFetch(q_len_texels, int(b)).x; }
// Words of StepScalars (shaders/common/step.glsl): step 0, seed 1, dropout_row 4.
uint step_of() { return texelFetch(step_texels, 0).x; }
uint seed_of() { return texelFetch(step_texels, 1).x; }
uint dropout_row_of() { return texelFetch(step_texels, 4).x; }
#else
layout(std430, binding = ATT_BINDING_LENGTHS) readonly buffer KeyLen { int key_len[]; };
layout(std430, binding = ATT_BINDING_LENGTHS + 1) readonly buffer QueryLen { int q_len[]; };
layout(std430, binding = ATT_BINDING_LENGTHS + 2) readonly buffer Steps { StepScalars steps[]; };
int key_len_of(uint b) { return key_len[b]; }
int q_len_of(uint b) { return q_len[b]; }
uint step_of() { return steps[0].step; }
uint seed_of() { return steps[0].seed; }
uint dropout_row_of() { return steps[0].dropout_row; }
#endif

// Dropout element of weight (b, h, i, j): batch row b counts from the step's dropout_row, so a
// share of the batch draws the mask of its rows in the whole batch. Wraps modulo 2^32 like the
// host twin. Reads the step buffer: call only with dropout on.
uint drop_element(uint b, uint h, uint i, uint j) {
  return row_at(b + dropout_row_of(), h, i) * pc.len_k + j;
}

// Valid keys of batch b (before the causal mask).
uint key_limit(uint b) {
  if ((pc.flags & F_KEY_LEN) == 0u) return pc.len_k;
  return uint(clamp(key_len_of(b), 0, int(pc.len_k)));
}
// Valid query rows of batch b.
uint query_limit(uint b) {
  if ((pc.flags & F_Q_LEN) == 0u) return pc.len_q;
  return uint(clamp(q_len_of(b), 0, int(pc.len_q)));
}
// Keys [0, row_limit) are visible to row i.
uint row_limit(uint i, uint klim, uint qlim) {
  if (i >= qlim) return 0u;
  return (pc.flags & F_CAUSAL) != 0u ? min(klim, i + 1u) : klim;
}
// Inverted-dropout factor of weight (b, h, i, j); 1 when dropout is off.
float drop_factor(uint b, uint h, uint i, uint j) {
  if ((pc.flags & F_DROPOUT) == 0u) return 1.0;
  return dropout_scale(pc.dropout_p, seed_of(), step_of(), pc.tensor_id,
                       drop_element(b, h, i, j));
}

// Register-only ("rows") kernels, attention_rows_*.comp: the Philox words of counter block
// `ctr` (= element / 4) of this attention's dropout mask, and the inverted-dropout factor of one
// word, exactly as drop_factor computes it: a run of consecutive weights then costs one Philox
// call per four weights instead of one per weight, with a bit-identical mask.
uvec4 drop_words(uint ctr) {
  return philox_block(seed_of(), step_of(), pc.tensor_id, ctr);
}
float drop_from_word(uint bits) {
  return dropout_word_scale(bits, pc.dropout_p);
}
#endif

#ifdef ATT_ROWS
// Rows kernels: a workgroup is exactly one subgroup of WG lanes, each owning ROWS rows (queries
// for the forward and dQ, keys for dK/dV) whose vectors stay in registers; the rows the lanes
// share are gathered one per lane and handed around by subgroupShuffle. No shared memory, no
// barriers: on CPU devices (llvmpipe) those are gathers and coroutine switches.
#ifdef VKF_F16
#define ATT_T4 f16vec4
#else
#define ATT_T4 vec4
#endif
const uint ROWS = BR;  // rows per lane (constant_id 1)
const uint DK4 = (DK + 3u) / 4u, DV4 = (DV + 3u) / 4u;
// Bit 0: Q (and dQ), 1: K (dK), 2: V (dV), 3: O (dO) rows may be read as 4-vectors: the head
// dim and all three strides are multiples of 4.
layout(constant_id = 5) const uint VEC = 0u;
layout(constant_id = 6) const uint DROP = 0u;   // dropout on (F_DROPOUT as a constant)
layout(constant_id = 7) const uint ALIGN4 = 0u; // len_k % 4 == 0: weight (i, 4n) starts a Philox block
const uint VEC_Q = 1u, VEC_K = 2u, VEC_V = 4u, VEC_O = 8u;

// Defines vec4 NAME(uint base, uint c): elements 4c .. 4c + 3 of the row of BUF that starts at
// element `base`, zero past its head dim D; a 4-vector read of BUF4 (BUF's f/f16vec4 view) when
// bit BIT of VEC allows it. `c` is a constant after unrolling, so the scalar fallback's tests
// fold away.
#define ATT_ROW_LOADER(NAME, BUF, BUF4, BIT, D)                   \
  vec4 NAME(uint base, uint c) {                                  \
    if ((VEC & (BIT)) != 0u) return vec4(BUF4[base / 4u + c]);    \
    vec4 x;                                                       \
    [[unroll]] for (uint e = 0; e < 4u; ++e) {                    \
      uint d = 4u * c + e;                                        \
      x[e] = d < (D) ? float(BUF[base + min(d, (D) - 1u)]) : 0.0; \
    }                                                             \
    return x;                                                     \
  }
// Defines void NAME(uint base, uint c, vec4 x), the store twin of ATT_ROW_LOADER.
#define ATT_ROW_STORER(NAME, BUF, BUF4, BIT, D) \
  void NAME(uint base, uint c, vec4 x) {        \
    if ((VEC & (BIT)) != 0u) {                  \
      BUF4[base / 4u + c] = ATT_T4(x);          \
      return;                                   \
    }                                           \
    [[unroll]] for (uint e = 0; e < 4u; ++e) {  \
      uint d = 4u * c + e;                      \
      if (d < (D)) BUF[base + d] = ATT_T(x[e]); \
    }                                           \
  }
// Inverted-dropout factors of the four consecutive weights e .. e + 3 from the Philox words of
// blocks e / 4 (lo) and e / 4 + 1 (hi); off = e % 4 (0 when ALIGN4 says so).
vec4 drop_factor4(uvec4 lo, uvec4 hi, uint off) {
  uvec4 x = off == 0u   ? lo
            : off == 1u ? uvec4(lo.yzw, hi.x)
            : off == 2u ? uvec4(lo.zw, hi.xy)
                        : uvec4(lo.w, hi.xyz);
  return vec4(drop_from_word(x.x), drop_from_word(x.y), drop_from_word(x.z), drop_from_word(x.w));
}
#endif

#endif
