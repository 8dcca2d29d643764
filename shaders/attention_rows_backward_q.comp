#version 450
// Attention backward, dQ, for CPU devices (the "rows" path; attention_backward_q.comp is the
// tiled GPU path, same arguments and results). Lanes own query rows as in
// attention_rows_forward.comp and walk the keys in blocks of WG, recomputing P from the saved
// LSE:
//   dS_ij = P_ij (Z_ij dO_i . V_j - delta_i),   dQ_i = scale * sum_j dS_ij K_j
// Each output is owned by one lane: deterministic, no atomics, no shared memory, no barrier.
// Grid: (ceil(len_q / (WG * ROWS)), heads, batch).
// vkf-variant: attention_rows_backward_q_f16 VKF_F16=1
// vkf-variant: attention_rows_backward_q_unrolled VKF_UNROLL_QUERIES=1
// vkf-variant: attention_rows_backward_q_unrolled_f16 VKF_UNROLL_QUERIES=1 VKF_F16=1
// vkf-variant: attention_rows_backward_q_texel VKF_TEXEL_TAIL=1
// vkf-variant: attention_rows_backward_q_texel_f16 VKF_TEXEL_TAIL=1 VKF_F16=1
// vkf-variant: attention_rows_backward_q_unrolled_texel VKF_UNROLL_QUERIES=1 VKF_TEXEL_TAIL=1
// vkf-variant: attention_rows_backward_q_unrolled_texel_f16 VKF_UNROLL_QUERIES=1 VKF_TEXEL_TAIL=1 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#ifdef VKF_TEXEL_TAIL
#extension GL_EXT_samplerless_texture_functions : require
#endif
#define ATT_BINDING_LENGTHS 7
#define ATT_ROWS 1
#include "attention_common.glsl"

layout(std430, binding = 0) readonly buffer Qb { ATT_T q[]; };
layout(std430, binding = 0) readonly buffer Q4b { ATT_T4 q4[]; };
layout(std430, binding = 1) readonly buffer Kb { ATT_T k[]; };
layout(std430, binding = 1) readonly buffer K4b { ATT_T4 k4[]; };
layout(std430, binding = 2) readonly buffer Vb { ATT_T v[]; };
layout(std430, binding = 2) readonly buffer V4b { ATT_T4 v4[]; };
layout(std430, binding = 3) readonly buffer dOb { ATT_T d_o[]; };
layout(std430, binding = 3) readonly buffer dO4b { ATT_T4 d_o4[]; };
layout(std430, binding = 4) readonly buffer Lb { float lse[]; };
layout(std430, binding = 5) readonly buffer Db { float delta[]; };
layout(std430, binding = 6) writeonly buffer dQb { ATT_T d_q[]; };
layout(std430, binding = 6) writeonly buffer dQ4b { ATT_T4 d_q4[]; };

ATT_ROW_LOADER(load_q4, q, q4, VEC_Q, DK)
ATT_ROW_LOADER(load_k4, k, k4, VEC_K, DK)
ATT_ROW_LOADER(load_v4, v, v4, VEC_V, DV)
ATT_ROW_LOADER(load_do4, d_o, d_o4, VEC_O, DV)
ATT_ROW_STORER(store_dq4, d_q, d_q4, VEC_Q, DK)

const uint S = WG;
const uint NW = S / 4u + 1u;  // Philox blocks a run of S weights touches

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  const uint i0 = gl_WorkGroupID.x * (S * ROWS);
  const uint klim = key_limit(b), qlim = query_limit(b);
  uint kend = i0 >= qlim ? 0u : klim;
  if ((pc.flags & F_CAUSAL) != 0u) kend = min(kend, min(i0 + S * ROWS, qlim));

  vec4 qr[ROWS][DK4];   // Q, pre-scaled
  vec4 dor[ROWS][DV4];  // dO
  vec4 acc[ROWS][DK4];  // dQ / scale
  float lse_r[ROWS], delta_r[ROWS];
  uint lim[ROWS];
  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    const uint i = i0 + r * S + lane, ic = min(i, pc.len_q - 1u);
    lim[r] = row_limit(i, klim, qlim);
    const uint qbase = q_at(b, h, ic), obase = o_at(b, h, ic);
    [[unroll]] for (uint c = 0; c < DK4; ++c) qr[r][c] = load_q4(qbase, c) * pc.scale;
    [[unroll]] for (uint c = 0; c < DV4; ++c) dor[r][c] = load_do4(obase, c);
    [[unroll]] for (uint c = 0; c < DK4; ++c) acc[r][c] = vec4(0.0);
    lse_r[r] = lse[row_at(b, h, ic)];
    delta_r[r] = delta[row_at(b, h, ic)];
  }

  for (uint j0 = 0; j0 < kend; j0 += S) {
    const uint jl = min(j0 + lane, kend - 1u);
    vec4 kr[DK4], vr[DV4];
    const uint kbase = k_at(b, h, jl), vbase = v_at(b, h, jl);
    [[unroll]] for (uint c = 0; c < DK4; ++c) kr[c] = load_k4(kbase, c);
    [[unroll]] for (uint c = 0; c < DV4; ++c) vr[c] = load_v4(vbase, c);

    // Bit c of zm[r]: weight (row r, j0 + c) is dropped (S <= 32), so that the loop over the
    // block's keys can stay a loop (unrolled, it takes llvmpipe seconds to compile).
    uint zm[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
      zm[r] = 0u;
      if (DROP != 0u) {
        const uint e0 = drop_element(b, h, i0 + r * S + lane, j0);
        const uint off = ALIGN4 != 0u ? 0u : e0 & 3u;
        uvec4 w[NW];
        [[unroll]] for (uint g = 0; g < NW; ++g)
          w[g] = (ALIGN4 != 0u && g == NW - 1u) ? uvec4(0u) : drop_words((e0 >> 2) + g);
        [[unroll]] for (uint g = 0; g < S / 4u; ++g) {
          const vec4 f = drop_factor4(w[g], w[g + 1u], off);
          [[unroll]] for (uint e = 0; e < 4u; ++e)
            zm[r] |= f[e] == 0.0 ? 1u << (4u * g + e) : 0u;
        }
      }
    }
    const float keep = DROP != 0u ? 1.0 / (1.0 - pc.dropout_p) : 1.0;  // as drop_from_word

    // Rolled, each shuffle's lane index is a loop variable, which llvmpipe turns into a
    // per-lane extract loop: cheap at 8 lanes, where unrolling costs more (code size) than it
    // saves; at 16 lanes the unrolled variant (constant indices) runs the backward 1.8-2.3x
    // faster (engine/ops/attention.cpp picks it by subgroup size).
#ifdef VKF_UNROLL_QUERIES
    [[unroll]] for (uint c = 0; c < S; ++c) {
#else
    [[dont_unroll]] for (uint c = 0; c < S; ++c) {
#endif
      vec4 kb[DK4], vb[DV4];
      [[unroll]] for (uint d = 0; d < DK4; ++d) kb[d] = subgroupShuffle(kr[d], c);
      [[unroll]] for (uint d = 0; d < DV4; ++d) vb[d] = subgroupShuffle(vr[d], c);
      [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        vec4 ts = vec4(0.0), tp = vec4(0.0);
        [[unroll]] for (uint d = 0; d < DK4; ++d) ts = fma(qr[r][d], kb[d], ts);
        [[unroll]] for (uint d = 0; d < DV4; ++d) tp = fma(dor[r][d], vb[d], tp);
        const float s = (ts.x + ts.y) + (ts.z + ts.w), dp = (tp.x + tp.y) + (tp.z + tp.w);
        const float p = j0 + c < lim[r] ? exp(s - lse_r[r]) : 0.0;
        const float z = ((zm[r] >> c) & 1u) != 0u ? 0.0 : keep;
        const float ds = p * (dp * z - delta_r[r]);
        [[unroll]] for (uint d = 0; d < DK4; ++d) acc[r][d] = fma(vec4(ds), kb[d], acc[r][d]);
      }
    }
  }

  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    const uint i = i0 + r * S + lane;
    if (i < pc.len_q) {
      const uint base = q_at(b, h, i);
      [[unroll]] for (uint c = 0; c < DK4; ++c) store_dq4(base, c, acc[r][c] * pc.scale);
    }
  }
}
