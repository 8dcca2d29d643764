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
// The _texel variants read dy, h and gamma through uniform texel buffers, as the forward's do.
// vkf-variant: layer_norm_backward_sg SUBGROUP=1
// vkf-variant: layer_norm_backward_sgrow SUBGROUP=1 SUBGROUP_ROWS=1
// vkf-variant: layer_norm_backward_f16 VKF_F16=1
// vkf-variant: layer_norm_backward_sg_f16 SUBGROUP=1 VKF_F16=1
// vkf-variant: layer_norm_backward_sgrow_f16 SUBGROUP=1 SUBGROUP_ROWS=1 VKF_F16=1
// vkf-variant: layer_norm_backward_texel VKF_TEXEL=1
// vkf-variant: layer_norm_backward_sg_texel SUBGROUP=1 VKF_TEXEL=1
// vkf-variant: layer_norm_backward_sgrow_texel SUBGROUP=1 SUBGROUP_ROWS=1 VKF_TEXEL=1
// vkf-variant: layer_norm_backward_texel_f16 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: layer_norm_backward_sg_texel_f16 SUBGROUP=1 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: layer_norm_backward_sgrow_texel_f16 SUBGROUP=1 SUBGROUP_ROWS=1 VKF_F16=1 VKF_TEXEL=1
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

layout(local_size_x_id = 0) in;  // a power of two
#ifdef VKF_TEXEL
layout(binding = 0) uniform textureBuffer dy_texels;     // [rows, d]
layout(binding = 1) uniform textureBuffer h_texels;      // [rows, d]
layout(binding = 2) uniform textureBuffer gamma_texels;  // [d]
#define LOAD_DY(i) texelFetch(dy_texels, int(i)).x
#define LOAD_H(i) texelFetch(h_texels, int(i)).x
#define LOAD_GAMMA(c) texelFetch(gamma_texels, int(c)).x
#else
layout(std430, binding = 0) readonly buffer DY { STORE_T dy[]; };   // [rows, d]
layout(std430, binding = 1) readonly buffer H { STORE_T h[]; };     // [rows, d]
layout(std430, binding = 2) readonly buffer G { float gamma[]; };   // [d]
#define LOAD_DY(i) float(dy[i])
#define LOAD_H(i) float(h[i])
#define LOAD_GAMMA(c) gamma[c]
#endif
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

// As in layer_norm_forward.comp: runs of four columns share one Philox block, and the step
// buffer is read once a row.
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

// As in layer_norm_forward.comp: the first RUNS runs of four columns of each lane keep g and
// xhat in registers between the two passes; the rest of a longer row is read again.
layout(constant_id = 1) const uint RUNS = 2;
vec2 kept[RUNS * 4u];  // (g, xhat)

vec2 g_xhat(uint base, uint c, float mean, float rstd) {
  return vec2(LOAD_DY(base + c) * LOAD_GAMMA(c), (LOAD_H(base + c) - mean) * rstd);
}

void store_dh(uint i, float dh, uint dropout_base) {
  dx[i] = STORE_T(pc.accumulate != 0u ? float(dx[i]) + dh : dh);
  if (pc.residual != 0u) ds[i] = STORE_T(dh * mask_scale(i, dropout_base));
}

void layer_norm_row_backward(uint row, uint lane, uint lanes) {
  uint base = row * pc.d;
  float mean = mean_in[row], rstd = rstd_in[row];
  uint dropout_base = pc.p > 0.0 ? st.dropout_row * pc.batch_row_rows * pc.d : 0u;
  uint first_uncached = (lane + RUNS * lanes) * 4u;  // this lane's first run past the kept ones

  vec2 acc = vec2(0.0);  // (sum g, sum g * xhat)
  [[unroll]] for (uint r = 0u; r < RUNS; ++r) {
    uint c4 = (lane + r * lanes) * 4u;
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      vec2 gx = vec2(0.0);
      if (c4 + q < pc.d) gx = g_xhat(base, c4 + q, mean, rstd);
      kept[r * 4u + q] = gx;
      acc += vec2(gx.x, gx.x * gx.y);
    }
  }
  for (uint c4 = first_uncached; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      vec2 gx = g_xhat(base, c, mean, rstd);
      acc += vec2(gx.x, gx.x * gx.y);
    }
  acc = row_sum(acc) / float(pc.d);

  [[unroll]] for (uint r = 0u; r < RUNS; ++r) {
    uint c4 = (lane + r * lanes) * 4u;
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      vec2 gx = kept[r * 4u + q];
      if (c4 + q < pc.d) store_dh(base + c4 + q, rstd * (gx.x - acc.x - gx.y * acc.y), dropout_base);
    }
  }
  for (uint c4 = first_uncached; c4 < pc.d; c4 += lanes * 4u)
    for (uint c = c4; c < min(c4 + 4u, pc.d); ++c) {
      vec2 gx = g_xhat(base, c, mean, rstd);
      store_dh(base + c, rstd * (gx.x - acc.x - gx.y * acc.y), dropout_base);
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
