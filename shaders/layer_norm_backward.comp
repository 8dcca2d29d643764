#version 450
// LayerNorm backward for the input. With xhat = (h - mean) * rstd and g = dy * gamma:
//   dh = rstd * (g - mean(g) - xhat * mean(g * xhat))
// In residual mode (h = x + dropout(s)) the residual input gets dx = dh and the sublayer output
// ds = dh * mask, the same Philox mask as the forward pass. dgamma and dbeta are reduced
// separately (layer_norm_dparams_*.comp) so that no float atomics are needed.
// Row reductions as in layer_norm_forward.comp: workgroup per row (shared memory, or subgroup then
// shared memory), or subgroup per row.
// The _f16 variants store dy, h, dx and ds as fp16 (16-bit storage only); gamma, mean, rstd and
// all arithmetic stay fp32.
// vkf-variant: layer_norm_backward_sg SUBGROUP=1
// vkf-variant: layer_norm_backward_sgrow SUBGROUP=1 SUBGROUP_ROWS=1
// vkf-variant: layer_norm_backward_f16 VKF_F16=1
// vkf-variant: layer_norm_backward_sg_f16 SUBGROUP=1 VKF_F16=1
// vkf-variant: layer_norm_backward_sgrow_f16 SUBGROUP=1 SUBGROUP_ROWS=1 VKF_F16=1
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

layout(local_size_x_id = 0) in;  // a power of two
layout(std430, binding = 0) readonly buffer DY { STORE_T dy[]; };   // [rows, d]
layout(std430, binding = 1) readonly buffer H { STORE_T h[]; };     // [rows, d]
layout(std430, binding = 2) readonly buffer G { float gamma[]; };   // [d]
layout(std430, binding = 3) readonly buffer M { float mean_in[]; }; // [rows]
layout(std430, binding = 4) readonly buffer R { float rstd_in[]; }; // [rows]
layout(std430, binding = 5) buffer DX { STORE_T dx[]; };            // [rows, d]
layout(std430, binding = 6) writeonly buffer DS { STORE_T ds[]; };  // [rows, d] residual mode
layout(std430, binding = 7) readonly buffer Step { StepScalars st; };
layout(push_constant) uniform Push {
  uint rows;
  uint d;
  float p;              // dropout probability of the forward pass
  uint tensor_id;       // its dropout stream
  uint residual;        // 1: also write ds
  uint accumulate;      // 1: dx += dh (the residual branch adds to a gradient already there)
  uint rows_per_group;  // subgroup-per-row variant: rows a workgroup covers
  uint batch_row_rows;   // rows per batch row (sequence length) for StepScalars.dropout_row; 0: none
} pc;

// The workgroup-per-row variants share the softmax kernels' reduction (workgroup_reduce.glsl).
layout(constant_id = 0) const uint WG = 256;  // the local size above
#ifndef SUBGROUP_ROWS
#if defined(SUBGROUP)
#define VKF_SUBGROUP 1
#endif
#define WG_REDUCE_VEC2 1
#include "workgroup_reduce.glsl"
#endif

// Sum over the invocations that share a row, in a fixed order (deterministic for a given
// configuration).
vec2 row_sum(vec2 v) {
#ifdef SUBGROUP_ROWS
  return subgroupAdd(v);
#else
  return wg_sum(v);
#endif
}

// As in layer_norm_forward.comp: runs of four columns share one Philox block.
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

void layer_norm_row_backward(uint row, uint lane, uint lanes) {
  uint base = row * pc.d;
  float mean = mean_in[row], rstd = rstd_in[row];

  vec2 acc = vec2(0.0);  // (sum g, sum g * xhat)
  for (uint c4 = lane * 4u; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      float g = float(dy[base + c]) * gamma[c];
      float xhat = (float(h[base + c]) - mean) * rstd;
      acc += vec2(g, g * xhat);
    }
  acc = row_sum(acc) / float(pc.d);

  for (uint c4 = lane * 4u; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      uint i = base + c;
      float g = float(dy[i]) * gamma[c];
      float xhat = (float(h[i]) - mean) * rstd;
      float dh = rstd * (g - acc.x - xhat * acc.y);
      dx[i] = STORE_T(pc.accumulate != 0u ? float(dx[i]) + dh : dh);
      if (pc.residual != 0u) ds[i] = STORE_T(dh * mask_scale(i));
    }
}

void main() {
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
#ifdef SUBGROUP_ROWS
  // Lane rank among the active invocations: right for partial subgroups too.
  uint lanes = subgroupAdd(1u), lane = subgroupExclusiveAdd(1u);
  uint last = min(pc.rows, (group + 1u) * pc.rows_per_group);
  for (uint row = group * pc.rows_per_group + gl_SubgroupID; row < last; row += gl_NumSubgroups)
    layer_norm_row_backward(row, lane, lanes);
#else
  if (group >= pc.rows) return;  // uniform over the workgroup
  layer_norm_row_backward(group, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
#endif
}
