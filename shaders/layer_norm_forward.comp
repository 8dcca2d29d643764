#version 450
// LayerNorm forward, optionally fused with the post-LN residual:
//   h = x + dropout(s)       (residual mode; plain mode: h = x)
//   y = (h - mean) * rstd * gamma + beta,  rstd = 1 / sqrt(var(h) + eps)
// mean and rstd are saved per row, and h in residual mode, for the backward pass. The variance
// is taken in a second pass over h (not E[h^2] - mean^2), which cancels badly for large means.
// Three ways to reduce a row (the same three in layer_norm_backward.comp):
//   layer_norm_forward        a workgroup per row, tree reduction in shared memory
//   layer_norm_forward_sg     a workgroup per row, subgroup adds then shared memory
//   layer_norm_forward_sgrow  a subgroup per row, no barriers (small d, and CPU devices, where a
//                             barrier costs far more than a longer loop)
// The _f16 variants store x, s, y and h as fp16 (16-bit storage only); gamma, beta, mean, rstd
// and all arithmetic stay fp32.
// The _texel variants read x, s, gamma and beta through uniform texel buffers (R32F views, R16F
// for f16 activations): Mesa 22.3's lavapipe loads a storage buffer a lane at a time and a
// texel buffer as a vector; other drivers may prefer either, so it is a tuned choice.
// vkf-variant: layer_norm_forward_sg SUBGROUP=1
// vkf-variant: layer_norm_forward_sgrow SUBGROUP=1 SUBGROUP_ROWS=1
// vkf-variant: layer_norm_forward_f16 VKF_F16=1
// vkf-variant: layer_norm_forward_sg_f16 SUBGROUP=1 VKF_F16=1
// vkf-variant: layer_norm_forward_sgrow_f16 SUBGROUP=1 SUBGROUP_ROWS=1 VKF_F16=1
// vkf-variant: layer_norm_forward_texel VKF_TEXEL=1
// vkf-variant: layer_norm_forward_sg_texel SUBGROUP=1 VKF_TEXEL=1
// vkf-variant: layer_norm_forward_sgrow_texel SUBGROUP=1 SUBGROUP_ROWS=1 VKF_TEXEL=1
// vkf-variant: layer_norm_forward_texel_f16 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: layer_norm_forward_sg_texel_f16 SUBGROUP=1 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: layer_norm_forward_sgrow_texel_f16 SUBGROUP=1 SUBGROUP_ROWS=1 VKF_F16=1 VKF_TEXEL=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef VKF_TEXEL
#extension GL_EXT_samplerless_texture_functions : require
#endif
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
#include "philox.glsl"
#include "step.glsl"
#ifdef VKF_F16
#include "f16_round.glsl"
#define STORE_ROUND(v) f16_rounded(v)
#else
#define STORE_ROUND(v) (v)
#endif

layout(local_size_x_id = 0) in;  // a power of two
#ifdef VKF_TEXEL
layout(binding = 0) uniform textureBuffer x_texels;      // [rows, d]
layout(binding = 1) uniform textureBuffer s_texels;      // [rows, d] residual mode
layout(binding = 2) uniform textureBuffer gamma_texels;  // [d]
layout(binding = 3) uniform textureBuffer beta_texels;   // [d]
#define LOAD_X(i) texelFetch(x_texels, int(i)).x
#define LOAD_S(i) texelFetch(s_texels, int(i)).x
#define LOAD_GAMMA(c) texelFetch(gamma_texels, int(c)).x
#define LOAD_BETA(c) texelFetch(beta_texels, int(c)).x
#else
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };     // [rows, d]
layout(std430, binding = 1) readonly buffer S { STORE_T s[]; };     // [rows, d] residual mode
layout(std430, binding = 2) readonly buffer G { float gamma[]; };   // [d]
layout(std430, binding = 3) readonly buffer B { float beta[]; };    // [d]
#define LOAD_X(i) float(x[i])
#define LOAD_S(i) float(s[i])
#define LOAD_GAMMA(c) gamma[c]
#define LOAD_BETA(c) beta[c]
#endif
layout(std430, binding = 4) writeonly buffer Y { STORE_T y[]; };    // [rows, d]
layout(std430, binding = 5) buffer H { STORE_T h[]; };              // [rows, d] residual mode
layout(std430, binding = 6) writeonly buffer M { float mean_out[]; };  // [rows]
layout(std430, binding = 7) writeonly buffer R { float rstd_out[]; };  // [rows]
layout(std430, binding = 8) readonly buffer Step { StepScalars st; };
layout(push_constant) uniform Push {
  uint rows;
  uint d;
  float eps;
  float p;               // dropout probability on s
  uint tensor_id;        // dropout stream of s
  uint residual;         // 1: h = x + dropout(s); 0: h = x
  uint rows_per_group;   // subgroup-per-row variant: rows a workgroup covers
  uint batch_row_rows;   // rows per batch row (sequence length) for StepScalars.dropout_row; 0: none
} pc;

// The workgroup-per-row variants share the softmax kernels' reduction (workgroup_reduce.glsl).
layout(constant_id = 0) const uint WG = 256;  // the local size above
#ifndef SUBGROUP_ROWS
#if defined(SUBGROUP)
#define VKF_SUBGROUP 1
#endif
#include "workgroup_reduce.glsl"
#endif

// Sum over the invocations that share a row, in a fixed order (deterministic for a given
// configuration).
float row_sum(float v) {
#ifdef SUBGROUP_ROWS
  return subgroupAdd(v);
#else
  return wg_sum(v);
#endif
}

// Each invocation walks its columns in runs of four, so that consecutive elements share one
// Philox block: the generator runs about once per four elements. The step buffer is only read
// when dropout is on, once a row (`dropout_base`).
uint cached_block = 0xFFFFFFFFu;
vec4 cached_scales;
float mask_scale(uint i, uint dropout_base) {
  if (pc.p <= 0.0) return 1.0;
  // Element i of this batch is element e of the step's whole batch (data-parallel shares).
  uint e = i + dropout_base;
  uint block = e >> 2;
  if (block != cached_block) {
    cached_scales = dropout_block_scales(pc.p, st.seed, st.step, pc.tensor_id, block);
    cached_block = block;
  }
  return cached_scales[e & 3u];
}

// The first RUNS runs of four columns of each lane stay in registers between the three passes
// over the row (the loops over them are unrolled so that the array is never indexed at run
// time, which would put it in memory); a row longer than RUNS * 4 columns a lane reads the rest
// again from memory. The host sizes RUNS to the row (engine/ops/layer_norm.cpp).
layout(constant_id = 1) const uint RUNS = 2;
float kept[RUNS * 4u];

// h (x in plain mode) at column c of the row at `base`; stores h in residual mode.
float load_h(uint base, uint c, uint dropout_base) {
  uint i = base + c;
  float v = LOAD_X(i);
  if (pc.residual != 0u) {
    // Statistics and y come from h as stored (rounded, in the f16 variants), so that they
    // agree with the h the backward pass reads. The rounding is done here rather than by
    // reading h[i] back, which Mesa 25's lavapipe gets wrong (common/f16_round.glsl).
    v = STORE_ROUND(v + LOAD_S(i) * mask_scale(i, dropout_base));
    h[i] = STORE_T(v);
  }
  return v;
}

// The columns past the kept runs: h as the first pass stored it (x in plain mode).
float stored_h(uint i) { return pc.residual != 0u ? float(h[i]) : LOAD_X(i); }

// Normalises one row; `lane` of `lanes` invocations take part.
void layer_norm_row(uint row, uint lane, uint lanes) {
  uint base = row * pc.d;
  uint dropout_base = pc.p > 0.0 ? st.dropout_row * pc.batch_row_rows * pc.d : 0u;
  uint first_uncached = (lane + RUNS * lanes) * 4u;  // this lane's first run past the kept ones

  float sum = 0.0;
  [[unroll]] for (uint r = 0u; r < RUNS; ++r) {
    uint c4 = (lane + r * lanes) * 4u;
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      float v = 0.0;
      if (c4 + q < pc.d) v = load_h(base, c4 + q, dropout_base);
      kept[r * 4u + q] = v;
      sum += v;
    }
  }
  for (uint c4 = first_uncached; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) sum += load_h(base, c, dropout_base);
  float mean = row_sum(sum) / float(pc.d);

  float sq = 0.0;
  [[unroll]] for (uint r = 0u; r < RUNS; ++r) {
    uint c4 = (lane + r * lanes) * 4u;
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      float v = kept[r * 4u + q] - mean;
      if (c4 + q < pc.d) sq += v * v;
    }
  }
  for (uint c4 = first_uncached; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      float v = stored_h(base + c) - mean;
      sq += v * v;
    }
  float rstd = inversesqrt(row_sum(sq) / float(pc.d) + pc.eps);

  [[unroll]] for (uint r = 0u; r < RUNS; ++r) {
    uint c4 = (lane + r * lanes) * 4u;
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      uint c = c4 + q;
      if (c < pc.d) y[base + c] = STORE_T((kept[r * 4u + q] - mean) * rstd * LOAD_GAMMA(c) + LOAD_BETA(c));
    }
  }
  for (uint c4 = first_uncached; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c)
      y[base + c] = STORE_T((stored_h(base + c) - mean) * rstd * LOAD_GAMMA(c) + LOAD_BETA(c));
  if (lane == 0u) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

void main() {
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
#ifdef SUBGROUP_ROWS
  // The host does not know the subgroup size a pipeline gets, so each workgroup covers a fixed
  // range of rows and its subgroups, however many, share it. Loop bounds are subgroup-uniform.
  // Lane rank among the active invocations: right for partial subgroups too.
  uint lanes = subgroupAdd(1u), lane = subgroupExclusiveAdd(1u);
  uint last = min(pc.rows, (group + 1u) * pc.rows_per_group);
  for (uint row = group * pc.rows_per_group + gl_SubgroupID; row < last; row += gl_NumSubgroups)
    layer_norm_row(row, lane, lanes);
#else
  if (group >= pc.rows) return;  // uniform over the workgroup
  layer_norm_row(group, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
#endif
}
