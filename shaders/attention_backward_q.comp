#version 450
// Attention backward, step 3: dQ. One workgroup owns BR query rows of one (batch, head) and
// walks the key tiles, recomputing P from the saved LSE:
//   dS_ij = P_ij (Z_ij dO_i . V_j - delta_i),   dQ_i = scale * sum_j dS_ij K_j
// Each output is owned by one thread: deterministic, no atomics.
// Grid: (ceil(len_q / BR), heads, batch).
// vkf-variant: attention_backward_q_f16 VKF_F16=1
// vkf-variant: attention_backward_q_texel VKF_TEXEL_TAIL=1
// vkf-variant: attention_backward_q_texel_f16 VKF_TEXEL_TAIL=1 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifdef VKF_TEXEL_TAIL
#extension GL_EXT_samplerless_texture_functions : require
#endif
#define ATT_BINDING_LENGTHS 7
#include "attention_common.glsl"

layout(std430, binding = 0) readonly buffer Qb { ATT_T q[]; };
layout(std430, binding = 1) readonly buffer Kb { ATT_T k[]; };
layout(std430, binding = 2) readonly buffer Vb { ATT_T v[]; };
layout(std430, binding = 3) readonly buffer dOb { ATT_T d_o[]; };
layout(std430, binding = 4) readonly buffer Lb { float lse[]; };
layout(std430, binding = 5) readonly buffer Db { float delta[]; };
layout(std430, binding = 6) writeonly buffer dQb { ATT_T d_q[]; };

shared float qs[BR * DK];    // Q tile, pre-scaled
shared float dos[BR * DV];   // dO tile
shared float ks[BC * KSTR];  // K tile
shared float vs[BC * DV];    // V tile
shared float dss[BR * BC];   // dS
shared float lse_s[BR];
shared float delta_s[BR];

const uint NQ = (BR * DK + WG - 1) / WG;  // dQ elements per thread

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  const uint i0 = gl_WorkGroupID.x * BR;
  const uint klim = key_limit(b), qlim = query_limit(b);
  uint kend = i0 >= qlim ? 0u : klim;
  if ((pc.flags & F_CAUSAL) != 0u) kend = min(kend, min(i0 + BR, qlim));

  for (uint e = tid; e < BR * DK; e += WG) {
    uint r = e / DK, d = e % DK, i = i0 + r;
    qs[e] = i < qlim ? float(q[q_at(b, h, i) + d]) * pc.scale : 0.0;
  }
  for (uint e = tid; e < BR * DV; e += WG) {
    uint r = e / DV, d = e % DV, i = i0 + r;
    dos[e] = i < qlim ? float(d_o[o_at(b, h, i) + d]) : 0.0;
  }
  for (uint r = tid; r < BR; r += WG) {
    uint i = i0 + r;
    lse_s[r] = i < qlim ? lse[row_at(b, h, i)] : 0.0;
    delta_s[r] = i < qlim ? delta[row_at(b, h, i)] : 0.0;
  }
  float acc[NQ];
  for (uint t = 0; t < NQ; ++t) acc[t] = 0.0;

  for (uint j0 = 0; j0 < kend; j0 += BC) {
    barrier();  // the previous tile's readers are done
    for (uint e = tid; e < BC * DK; e += WG) {
      uint c = e / DK, d = e % DK, j = j0 + c;
      ks[c * KSTR + d] = j < kend ? float(k[k_at(b, h, j) + d]) : 0.0;
    }
    for (uint e = tid; e < BC * DV; e += WG) {
      uint c = e / DV, d = e % DV, j = j0 + c;
      vs[e] = j < kend ? float(v[v_at(b, h, j) + d]) : 0.0;
    }
    barrier();
    for (uint e = tid; e < BR * BC; e += WG) {
      uint r = e / BC, c = e % BC, i = i0 + r, j = j0 + c;
      float ds = 0.0;
      if (j < row_limit(i, klim, qlim)) {
        float s = 0.0;
        ATT_LOOP for (uint d = 0; d < DK; ++d) s += qs[r * DK + d] * ks[c * KSTR + d];
        float p = exp(s - lse_s[r]);
        float dp = 0.0;
        ATT_LOOP for (uint d = 0; d < DV; ++d) dp += dos[r * DV + d] * vs[c * DV + d];
        ds = p * (dp * drop_factor(b, h, i, j) - delta_s[r]);
      }
      dss[e] = ds;
    }
    barrier();
    for (uint t = 0; t < NQ; ++t) {
      uint e = tid + t * WG;
      if (e < BR * DK) {
        uint r = e / DK, d = e % DK;
        float a = acc[t];
        ATT_LOOP for (uint c = 0; c < BC; ++c) a += dss[r * BC + c] * ks[c * KSTR + d];
        acc[t] = a;
      }
    }
  }
  for (uint t = 0; t < NQ; ++t) {
    uint e = tid + t * WG;
    uint r = e / DK, d = e % DK, i = i0 + r;
    if (e < BR * DK && i < pc.len_q) d_q[q_at(b, h, i) + d] = ATT_T(acc[t] * pc.scale);
  }
}
