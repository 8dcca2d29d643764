#version 450
// Attention backward, step 1: delta[b, h, i] = sum_d dO[i, d] * O[i, d], the row term of
// dS = P * (dP - delta) (FlashAttention-2). With dropout O = (P * Z) V, so this still equals
// sum_j P_ij dP_ij. One thread per row; grid groups_1d(batch * heads * len_q).
// vkf-variant: attention_backward_delta_f16 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "attention_common.glsl"
#include "index.glsl"

layout(std430, binding = 0) readonly buffer Ob { ATT_T o[]; };
layout(std430, binding = 1) readonly buffer dOb { ATT_T d_o[]; };
layout(std430, binding = 2) writeonly buffer Db { float delta[]; };

void main() {
  uint n = global_index_1d();
  if (n >= pc.batch * pc.heads * pc.len_q) return;
  uint i = n % pc.len_q, bh = n / pc.len_q;
  uint h = bh % pc.heads, b = bh / pc.heads;
  uint base = o_at(b, h, i);
  float s = 0.0;
  ATT_LOOP for (uint d = 0; d < DV; ++d) s += float(d_o[base + d]) * float(o[base + d]);
  delta[n] = s;
}
