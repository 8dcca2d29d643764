#version 450
// Attention backward, step 2: dK and dV. One workgroup owns BC keys of one (batch, head) and
// walks the query tiles, recomputing P = exp(Q K^T * scale - LSE) from the saved LSE (no
// len_q x len_k matrix in memory):
//   dV_j += sum_i (P_ij Z_ij) dO_i      (Z: inverted-dropout factors)
//   dS_ij = P_ij (Z_ij dO_i . V_j - delta_i)
//   dK_j += scale * sum_i dS_ij Q_i
// Each output is owned by one thread: deterministic, no atomics.
// Grid: (ceil(len_k / BC), heads, batch).
// vkf-variant: attention_backward_kv_f16 VKF_F16=1
// vkf-variant: attention_backward_kv_texel VKF_TEXEL_TAIL=1
// vkf-variant: attention_backward_kv_texel_f16 VKF_TEXEL_TAIL=1 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifdef VKF_TEXEL_TAIL
#extension GL_EXT_samplerless_texture_functions : require
#endif
#define ATT_BINDING_LENGTHS 8
#include "attention_common.glsl"

layout(std430, binding = 0) readonly buffer Qb { ATT_T q[]; };
layout(std430, binding = 1) readonly buffer Kb { ATT_T k[]; };
layout(std430, binding = 2) readonly buffer Vb { ATT_T v[]; };
layout(std430, binding = 3) readonly buffer dOb { ATT_T d_o[]; };
layout(std430, binding = 4) readonly buffer Lb { float lse[]; };
layout(std430, binding = 5) readonly buffer Db { float delta[]; };
layout(std430, binding = 6) writeonly buffer dKb { ATT_T d_k[]; };
layout(std430, binding = 7) writeonly buffer dVb { ATT_T d_v[]; };

shared float ks[BC * KSTR];  // K tile, pre-scaled
shared float vs[BC * DV];    // V tile
shared float qs[BR * DK];    // Q tile
shared float dos[BR * DV];   // dO tile
shared float pz[BR * BC];    // P * Z
shared float dss[BR * BC];   // dS
shared float lse_s[BR];
shared float delta_s[BR];

const uint NK = (BC * DK + WG - 1) / WG;  // dK elements per thread
const uint NV = (BC * DV + WG - 1) / WG;  // dV elements per thread

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  const uint j0 = gl_WorkGroupID.x * BC;
  const uint klim = key_limit(b), qlim = query_limit(b);
  // Rows of this key tile's queries that can see any of its keys; uniform over the workgroup.
  uint ibegin = (pc.flags & F_CAUSAL) != 0u ? (j0 / BR) * BR : 0u;
  uint iend = j0 < klim ? qlim : 0u;

  for (uint e = tid; e < BC * DK; e += WG) {
    uint c = e / DK, d = e % DK, j = j0 + c;
    ks[c * KSTR + d] = j < klim ? float(k[k_at(b, h, j) + d]) * pc.scale : 0.0;
  }
  for (uint e = tid; e < BC * DV; e += WG) {
    uint c = e / DV, d = e % DV, j = j0 + c;
    vs[e] = j < klim ? float(v[v_at(b, h, j) + d]) : 0.0;
  }
  float acc_k[NK], acc_v[NV];
  for (uint t = 0; t < NK; ++t) acc_k[t] = 0.0;
  for (uint t = 0; t < NV; ++t) acc_v[t] = 0.0;

  for (uint i0 = ibegin; i0 < iend; i0 += BR) {
    barrier();  // the previous tile's readers are done
    for (uint e = tid; e < BR * DK; e += WG) {
      uint r = e / DK, d = e % DK, i = i0 + r;
      qs[e] = i < qlim ? float(q[q_at(b, h, i) + d]) : 0.0;
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
    barrier();
    for (uint e = tid; e < BR * BC; e += WG) {
      uint r = e / BC, c = e % BC, i = i0 + r, j = j0 + c;
      float pzv = 0.0, ds = 0.0;
      if (j < row_limit(i, klim, qlim)) {
        float s = 0.0;
        ATT_LOOP for (uint d = 0; d < DK; ++d) s += qs[r * DK + d] * ks[c * KSTR + d];
        float p = exp(s - lse_s[r]);
        float dp = 0.0;
        ATT_LOOP for (uint d = 0; d < DV; ++d) dp += dos[r * DV + d] * vs[c * DV + d];
        float z = drop_factor(b, h, i, j);
        pzv = p * z;
        ds = p * (dp * z - delta_s[r]);
      }
      pz[e] = pzv;
      dss[e] = ds;
    }
    barrier();
    for (uint t = 0; t < NV; ++t) {
      uint e = tid + t * WG;
      if (e < BC * DV) {
        uint c = e / DV, d = e % DV;
        float a = acc_v[t];
        ATT_LOOP for (uint r = 0; r < BR; ++r) a += pz[r * BC + c] * dos[r * DV + d];
        acc_v[t] = a;
      }
    }
    for (uint t = 0; t < NK; ++t) {
      uint e = tid + t * WG;
      if (e < BC * DK) {
        uint c = e / DK, d = e % DK;
        float a = acc_k[t];
        ATT_LOOP for (uint r = 0; r < BR; ++r) a += dss[r * BC + c] * qs[r * DK + d];
        acc_k[t] = a;
      }
    }
  }
  for (uint t = 0; t < NK; ++t) {
    uint e = tid + t * WG;
    uint c = e / DK, d = e % DK, j = j0 + c;
    if (e < BC * DK && j < pc.len_k) d_k[k_at(b, h, j) + d] = ATT_T(acc_k[t] * pc.scale);
  }
  for (uint t = 0; t < NV; ++t) {
    uint e = tid + t * WG;
    uint c = e / DV, d = e % DV, j = j0 + c;
    if (e < BC * DV && j < pc.len_k) d_v[v_at(b, h, j) + d] = ATT_T(acc_v[t]);
  }
}
