#version 450
// Label-smoothed cross-entropy over the vocabulary, one workgroup per row of logits [rows, V].
//
// With lse = log sum_v exp(x_v), log p_v = x_v - lse, target t and smoothing eps (the mass eps is
// spread uniformly over all V entries, target included: PyTorch label_smoothing, Marian):
//   loss = -(1 - eps) * log p_t - eps / V * sum_v log p_v = lse - (1 - eps) * x_t - eps * mean_v x_v
//   dloss/dx_v = p_v - (1 - eps) * [v == t] - eps / V,  times StepScalars.grad_scale
// Rows whose target is pad_id (or outside [0, V)) give loss 0, log p 0 and a zero gradient row.
//
// One read of the row gives max, the rescaled sum of exponentials (online softmax) and sum_v x_v;
// a second read writes the gradient, so probabilities are never stored. dx may alias x (the
// gradient overwrites the logits): each element is read and then written by the same invocation.
// The _f16 variants store x and dx as fp16 (16-bit storage only); the per-row outputs and all
// arithmetic stay fp32, so the gradient is rounded once, when it is stored.
// The _texel variants read x through a uniform texel buffer (an R32F or R16F view of the same
// memory; ops::RowKernelConfig::reads says why): Mesa 22.3's lavapipe loads a storage buffer one
// lane at a time. In place, dx still writes the viewed memory; each element is read before the
// same invocation writes it, and no invocation reads another's elements.
#extension GL_GOOGLE_include_directive : require
// vkf-variant: cross_entropy_sg VKF_SUBGROUP=1
// vkf-variant: cross_entropy_nograd VKF_NO_GRAD=1
// vkf-variant: cross_entropy_nograd_sg VKF_NO_GRAD=1 VKF_SUBGROUP=1
// vkf-variant: cross_entropy_f16 VKF_F16=1
// vkf-variant: cross_entropy_sg_f16 VKF_SUBGROUP=1 VKF_F16=1
// vkf-variant: cross_entropy_nograd_f16 VKF_NO_GRAD=1 VKF_F16=1
// vkf-variant: cross_entropy_nograd_sg_f16 VKF_NO_GRAD=1 VKF_SUBGROUP=1 VKF_F16=1
// vkf-variant: cross_entropy_texel VKF_TEXEL=1
// vkf-variant: cross_entropy_sg_texel VKF_SUBGROUP=1 VKF_TEXEL=1
// vkf-variant: cross_entropy_nograd_texel VKF_NO_GRAD=1 VKF_TEXEL=1
// vkf-variant: cross_entropy_nograd_sg_texel VKF_NO_GRAD=1 VKF_SUBGROUP=1 VKF_TEXEL=1
// vkf-variant: cross_entropy_texel_f16 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: cross_entropy_sg_texel_f16 VKF_SUBGROUP=1 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: cross_entropy_nograd_texel_f16 VKF_NO_GRAD=1 VKF_F16=1 VKF_TEXEL=1
// vkf-variant: cross_entropy_nograd_sg_texel_f16 VKF_NO_GRAD=1 VKF_SUBGROUP=1 VKF_F16=1 VKF_TEXEL=1
#ifdef VKF_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require
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
#include "step.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two

#ifdef VKF_TEXEL
layout(binding = 0) uniform textureBuffer x_texels;  // [rows, V]: R32F, or R16F for f16
#define LOAD_X(i) texelFetch(x_texels, int(i)).x
#else
layout(std430, binding = 0) buffer Logits { STORE_T x[]; };  // [rows, V]
#define LOAD_X(i) float(x[i])
#endif
layout(std430, binding = 1) readonly buffer Targets { int target[]; };    // [rows]
layout(std430, binding = 2) readonly buffer Step { StepScalars step_scalars; };
layout(std430, binding = 3) writeonly buffer RowLoss { float row_loss[]; };  // [rows]
layout(std430, binding = 4) writeonly buffer RowLogp { float row_logp[]; };  // [rows]
#ifndef VKF_NO_GRAD
layout(std430, binding = 5) writeonly buffer DLogits { STORE_T dx[]; };    // [rows, V]
#endif
layout(push_constant) uniform Push {
  uint rows;
  uint V;
  int pad_id;
  float eps;
} p;

const float k_lowest = -3.402823466e38;  // finite, so no inf arithmetic is needed

#include "workgroup_reduce.glsl"
#include "online_lse.glsl"

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x;
  uint base = row * p.V;
  int tgt = target[row];
  bool valid = tgt != p.pad_id && tgt >= 0 && uint(tgt) < p.V;

  if (!valid) {
#ifndef VKF_NO_GRAD
    for (uint i = t; i < p.V; i += WG) dx[base + i] = STORE_T(0.0);
#endif
    if (t == 0) {
      row_loss[row] = 0.0;
      row_logp[row] = 0.0;
    }
    return;
  }

  float x_t = LOAD_X(base + uint(tgt));  // read before any gradient is written (in-place safe)
  float m = k_lowest, s = 0.0, sum_x = 0.0;
  for (uint i = t; i < p.V; i += WG) {
    float v = LOAD_X(base + i);
    lse_add(m, s, v);
    sum_x += v;
  }
  float row_max = wg_max(m);
  float total = wg_sum(lse_share(m, s, row_max));
  float lse = row_max + log(total);
  float eps = p.eps;
  float mean_x = eps > 0.0 ? wg_sum(sum_x) / float(p.V) : 0.0;

  if (t == 0) {
    row_loss[row] = (lse - x_t) * (1.0 - eps) + eps * (lse - mean_x);
    row_logp[row] = x_t - lse;
  }
#ifndef VKF_NO_GRAD
  float scale = step_scalars.grad_scale;
  float uniform_mass = eps / float(p.V);
  for (uint i = t; i < p.V; i += WG) {
    float g = exp(LOAD_X(base + i) - lse) - uniform_mass;
    if (i == uint(tgt)) g -= 1.0 - eps;
    dx[base + i] = STORE_T(g * scale);
  }
#endif
}
