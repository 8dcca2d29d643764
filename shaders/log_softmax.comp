#version 450
// y[r, v] = x[r, v] - log sum_u exp(x[r, u]), one workgroup per row of [rows, V]. One read of the
// row for the max and the rescaled sum of exponentials (online softmax), one read + write for y.
// y may alias x (in place): each element is read and then written by the same invocation.
// The _f16 variants store x and y as fp16 (16-bit storage only); all arithmetic stays fp32.
// The log_sum_exp variants (VKF_LSE_ONLY) stop after the first read and write lse[r] (fp32)
// instead of y: a top-k that picks from the raw logits subtracts it from its winners only
// (engine/ops/topk.h, TopKArgs::log_softmax), without writing the whole row.
#extension GL_GOOGLE_include_directive : require
// vkf-variant: log_softmax_sg VKF_SUBGROUP=1
// vkf-variant: log_softmax_f16 VKF_F16=1
// vkf-variant: log_softmax_sg_f16 VKF_SUBGROUP=1 VKF_F16=1
// vkf-variant: log_sum_exp VKF_LSE_ONLY=1
// vkf-variant: log_sum_exp_sg VKF_LSE_ONLY=1 VKF_SUBGROUP=1
// vkf-variant: log_sum_exp_f16 VKF_LSE_ONLY=1 VKF_F16=1
// vkf-variant: log_sum_exp_sg_f16 VKF_LSE_ONLY=1 VKF_SUBGROUP=1 VKF_F16=1
#ifdef VKF_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two

layout(std430, binding = 0) buffer X { STORE_T x[]; };  // [rows, V]
#ifdef VKF_LSE_ONLY
layout(std430, binding = 1) writeonly buffer Lse { float lse_out[]; };  // [rows]
#else
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };  // [rows, V]
#endif
layout(push_constant) uniform Push {
  uint rows;
  uint V;
} p;

const float k_lowest = -3.402823466e38;

#include "workgroup_reduce.glsl"
#include "online_lse.glsl"

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x;
  uint base = row * p.V;
  float m = k_lowest, s = 0.0;
  for (uint i = t; i < p.V; i += WG) {
    float v = float(x[base + i]);
    lse_add(m, s, v);
  }
  float row_max = wg_max(m);
  float lse = row_max + log(wg_sum(lse_share(m, s, row_max)));
#ifdef VKF_LSE_ONLY
  if (t == 0u) lse_out[row] = lse;
#else
  for (uint i = t; i < p.V; i += WG) y[base + i] = STORE_T(float(x[base + i]) - lse);
#endif
}
