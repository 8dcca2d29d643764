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
// vkf-variant: layer_norm_forward_sg SUBGROUP=1
// vkf-variant: layer_norm_forward_sgrow SUBGROUP=1 SUBGROUP_ROWS=1
// vkf-variant: layer_norm_forward_f16 VKF_F16=1
// vkf-variant: layer_norm_forward_sg_f16 SUBGROUP=1 VKF_F16=1
// vkf-variant: layer_norm_forward_sgrow_f16 SUBGROUP=1 SUBGROUP_ROWS=1 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
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
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };     // [rows, d]
layout(std430, binding = 1) readonly buffer S { STORE_T s[]; };     // [rows, d] residual mode
layout(std430, binding = 2) readonly buffer G { float gamma[]; };   // [d]
layout(std430, binding = 3) readonly buffer B { float beta[]; };    // [d]
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
// when dropout is on.
uint cached_block = 0xFFFFFFFFu;
vec4 cached_scales;
float mask_scale(uint i) {
  if (pc.p <= 0.0) return 1.0;
  // Element i of this batch is element e of the step's whole batch (data-parallel shares).
  uint e = i + st.dropout_row * pc.batch_row_rows * pc.d;
  uint block = e >> 2;
  if (block != cached_block) {
    cached_scales = dropout_block_scales(pc.p, st.seed, st.step, pc.tensor_id, block);
    cached_block = block;
  }
  return cached_scales[e & 3u];
}

// Normalises one row; `lane` of `lanes` invocations take part.
void layer_norm_row(uint row, uint lane, uint lanes) {
  uint base = row * pc.d;
  bool residual = pc.residual != 0u;

  float sum = 0.0;
  for (uint c4 = lane * 4u; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      uint i = base + c;
      float v = float(x[i]);
      if (residual) {
        // Statistics and y come from h as stored (rounded, in the f16 variants), so that they
        // agree with the h the backward pass reads. The rounding is done here rather than by
        // reading h[i] back, which Mesa 25's lavapipe gets wrong (common/f16_round.glsl).
        v = STORE_ROUND(v + float(s[i]) * mask_scale(i));
        h[i] = STORE_T(v);
      }
      sum += v;
    }
  float mean = row_sum(sum) / float(pc.d);

  float sq = 0.0;
  for (uint c4 = lane * 4u; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      float v = float(residual ? h[base + c] : x[base + c]) - mean;
      sq += v * v;
    }
  float rstd = inversesqrt(row_sum(sq) / float(pc.d) + pc.eps);

  for (uint c4 = lane * 4u; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      float v = float(residual ? h[base + c] : x[base + c]);
      y[base + c] = STORE_T((v - mean) * rstd * gamma[c] + beta[c]);
    }
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
