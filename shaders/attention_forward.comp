#version 450
// Fused attention forward, flash-attention style: O = softmax(Q K^T * scale + mask) V with
// dropout on the weights. One workgroup owns BR query rows of one (batch, head) and streams the
// keys in tiles of BC, keeping a running max m and sum l per row (online softmax), so no
// len_q x len_k matrix ever reaches device memory. Writes LSE = m + log(l) per row for the
// backward (0 for a row that sees no key; its O is 0).
// Grid: (ceil(len_q / BR), heads, batch).
// vkf-variant: attention_forward_f16 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#define ATT_BINDING_LENGTHS 5
#include "attention_common.glsl"

layout(std430, binding = 0) readonly buffer Qb { ATT_T q[]; };
layout(std430, binding = 1) readonly buffer Kb { ATT_T k[]; };
layout(std430, binding = 2) readonly buffer Vb { ATT_T v[]; };
layout(std430, binding = 3) writeonly buffer Ob { ATT_T o[]; };
layout(std430, binding = 4) writeonly buffer Lb { float lse[]; };

shared float qs[BR * DK];   // Q tile, pre-scaled
shared float ks[BC * KSTR]; // K tile
shared float vs[BC * DV];   // V tile
shared float ps[BR * BC];   // scores, then weights
shared float m_s[BR];       // running row max
shared float l_s[BR];       // running row sum of exp (before dropout)
shared float alpha_s[BR];   // rescale of the accumulator for this key tile

const uint OPT = (BR * DV + WG - 1) / WG;  // output elements per thread

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  const uint i0 = gl_WorkGroupID.x * BR;
  const uint klim = key_limit(b), qlim = query_limit(b);
  // Keys any row of this tile can see; uniform over the workgroup.
  uint kend = i0 >= qlim ? 0u : klim;
  if ((pc.flags & F_CAUSAL) != 0u) kend = min(kend, min(i0 + BR, qlim));

  for (uint e = tid; e < BR * DK; e += WG) {
    uint r = e / DK, d = e % DK, i = i0 + r;
    qs[e] = i < qlim ? float(q[q_at(b, h, i) + d]) * pc.scale : 0.0;
  }
  for (uint r = tid; r < BR; r += WG) {
    m_s[r] = -1e30;
    l_s[r] = 0.0;
  }
  float acc[OPT];
  for (uint t = 0; t < OPT; ++t) acc[t] = 0.0;

  for (uint j0 = 0; j0 < kend; j0 += BC) {
    barrier();  // the previous tile's readers are done with ks, vs, ps
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
      uint r = e / BC, c = e % BC;
      float s = 0.0;
      ATT_LOOP for (uint d = 0; d < DK; ++d) s += qs[r * DK + d] * ks[c * KSTR + d];
      ps[e] = s;
    }
    barrier();
    // Online softmax, one thread per row: new max, rescale factor, weights, running sum.
    for (uint r = tid; r < BR; r += WG) {
      uint lim = row_limit(i0 + r, klim, qlim);
      uint ncols = lim > j0 ? min(lim - j0, BC) : 0u;
      float m_old = m_s[r], m_new = m_old;
      ATT_LOOP for (uint c = 0; c < ncols; ++c) m_new = max(m_new, ps[r * BC + c]);
      float sum = 0.0;
      ATT_LOOP for (uint c = 0; c < BC; ++c) {
        float p = c < ncols ? exp(ps[r * BC + c] - m_new) : 0.0;
        ps[r * BC + c] = p;
        sum += p;
      }
      float alpha = exp(m_old - m_new);
      alpha_s[r] = alpha;
      l_s[r] = l_s[r] * alpha + sum;
      m_s[r] = m_new;
    }
    barrier();
    if ((pc.flags & F_DROPOUT) != 0u) {
      // The sum l stays undropped: dropout scales the normalised weights.
      for (uint e = tid; e < BR * BC; e += WG) {
        uint r = e / BC, c = e % BC;
        if (ps[e] != 0.0) ps[e] *= drop_factor(b, h, i0 + r, j0 + c);
      }
      barrier();
    }
    for (uint t = 0; t < OPT; ++t) {
      uint e = tid + t * WG;
      if (e < BR * DV) {
        uint r = e / DV, d = e % DV;
        float a = acc[t] * alpha_s[r];
        ATT_LOOP for (uint c = 0; c < BC; ++c) a += ps[r * BC + c] * vs[c * DV + d];
        acc[t] = a;
      }
    }
  }
  barrier();
  for (uint t = 0; t < OPT; ++t) {
    uint e = tid + t * WG;
    uint r = e / DV, d = e % DV, i = i0 + r;
    if (e < BR * DV && i < pc.len_q) {
      float l = l_s[r];
      o[o_at(b, h, i) + d] = ATT_T(l > 0.0 ? acc[t] / l : 0.0);
    }
  }
  for (uint r = tid; r < BR; r += WG) {
    uint i = i0 + r;
    if (i < pc.len_q) {
      float l = l_s[r];
      lse[row_at(b, h, i)] = l > 0.0 ? m_s[r] + log(l) : 0.0;
    }
  }
}
