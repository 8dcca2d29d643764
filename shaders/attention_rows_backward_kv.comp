#version 450
// Attention backward, dK and dV, for CPU devices (the "rows" path; attention_backward_kv.comp is
// the tiled GPU path, same arguments and results). The workgroup is one subgroup of WG lanes;
// lane `lane` owns key rows jw + lane * ROWS + r, r < ROWS (consecutive, so the dropout weights
// of one query and a lane's keys are consecutive mask elements), with K (pre-scaled), V and the
// dK, dV accumulators in registers. Queries stream in blocks of WG: lane c gathers query row
// i0 + c of Q and dO with its LSE and delta, subgroupShuffle hands them to every lane, and P is
// recomputed from the saved LSE:
//   dV_j += sum_i (P_ij Z_ij) dO_i      (Z: inverted-dropout factors)
//   dS_ij = P_ij (Z_ij dO_i . V_j - delta_i)
//   dK_j += scale * sum_i dS_ij Q_i
// Each output is owned by one lane: deterministic, no atomics, no shared memory, no barrier.
// Grid: (ceil(len_k / (WG * ROWS)), heads, batch).
// vkf-variant: attention_rows_backward_kv_f16 VKF_F16=1
// vkf-variant: attention_rows_backward_kv_unrolled VKF_UNROLL_QUERIES=1
// vkf-variant: attention_rows_backward_kv_unrolled_f16 VKF_UNROLL_QUERIES=1 VKF_F16=1
// vkf-variant: attention_rows_backward_kv_texel VKF_TEXEL_TAIL=1
// vkf-variant: attention_rows_backward_kv_texel_f16 VKF_TEXEL_TAIL=1 VKF_F16=1
// vkf-variant: attention_rows_backward_kv_unrolled_texel VKF_UNROLL_QUERIES=1 VKF_TEXEL_TAIL=1
// vkf-variant: attention_rows_backward_kv_unrolled_texel_f16 VKF_UNROLL_QUERIES=1 VKF_TEXEL_TAIL=1 VKF_F16=1
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
#define ATT_BINDING_LENGTHS 8
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
layout(std430, binding = 6) writeonly buffer dKb { ATT_T d_k[]; };
layout(std430, binding = 6) writeonly buffer dK4b { ATT_T4 d_k4[]; };
layout(std430, binding = 7) writeonly buffer dVb { ATT_T d_v[]; };
layout(std430, binding = 7) writeonly buffer dV4b { ATT_T4 d_v4[]; };

ATT_ROW_LOADER(load_q4, q, q4, VEC_Q, DK)
ATT_ROW_LOADER(load_k4, k, k4, VEC_K, DK)
ATT_ROW_LOADER(load_v4, v, v4, VEC_V, DV)
ATT_ROW_LOADER(load_do4, d_o, d_o4, VEC_O, DV)
ATT_ROW_STORER(store_dk4, d_k, d_k4, VEC_K, DK)
ATT_ROW_STORER(store_dv4, d_v, d_v4, VEC_V, DV)

const uint S = WG;
const uint NW = (ROWS + 3u) / 4u + 1u;  // Philox blocks a run of ROWS weights touches
const uint NC = (ROWS + 3u) / 4u;       // runs of 4 weights

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  const uint jw = gl_WorkGroupID.x * (S * ROWS);
  const uint jl0 = jw + lane * ROWS;  // this lane's first key
  const uint klim = key_limit(b), qlim = query_limit(b);
  // Queries that can see any key of this workgroup; uniform over the subgroup.
  const uint ibegin = (pc.flags & F_CAUSAL) != 0u ? jw : 0u;
  const uint iend = jw < klim ? qlim : 0u;

  vec4 kr[ROWS][DK4];  // K, pre-scaled
  vec4 vr[ROWS][DV4];
  vec4 acc_k[ROWS][DK4], acc_v[ROWS][DV4];
  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    const uint jc = min(jl0 + r, pc.len_k - 1u);
    const uint kbase = k_at(b, h, jc), vbase = v_at(b, h, jc);
    [[unroll]] for (uint c = 0; c < DK4; ++c) kr[r][c] = load_k4(kbase, c) * pc.scale;
    [[unroll]] for (uint c = 0; c < DV4; ++c) vr[r][c] = load_v4(vbase, c);
    [[unroll]] for (uint c = 0; c < DK4; ++c) acc_k[r][c] = vec4(0.0);
    [[unroll]] for (uint c = 0; c < DV4; ++c) acc_v[r][c] = vec4(0.0);
  }

  for (uint i0 = ibegin; i0 < iend; i0 += S) {
    const uint il = min(i0 + lane, iend - 1u);
    vec4 qr[DK4], dor[DV4];
    const uint qbase = q_at(b, h, il), obase = o_at(b, h, il);
    [[unroll]] for (uint c = 0; c < DK4; ++c) qr[c] = load_q4(qbase, c);
    [[unroll]] for (uint c = 0; c < DV4; ++c) dor[c] = load_do4(obase, c);
    const float lse_l = lse[row_at(b, h, il)], delta_l = delta[row_at(b, h, il)];

    // Rolled, each shuffle's lane index is a loop variable, which llvmpipe turns into a
    // per-lane extract loop: cheap at 8 lanes, where unrolling costs more (code size) than it
    // saves; at 16 lanes the unrolled variant (constant indices) runs the backward 1.8-2.3x
    // faster (engine/ops/attention.cpp picks it by subgroup size).
#ifdef VKF_UNROLL_QUERIES
    [[unroll]] for (uint c = 0; c < S; ++c) {
#else
    [[dont_unroll]] for (uint c = 0; c < S; ++c) {
#endif
      const uint i = i0 + c;
      const uint lim = row_limit(i, klim, qlim);
      vec4 qb[DK4], dob[DV4];
      [[unroll]] for (uint d = 0; d < DK4; ++d) qb[d] = subgroupShuffle(qr[d], c);
      [[unroll]] for (uint d = 0; d < DV4; ++d) dob[d] = subgroupShuffle(dor[d], c);
      const float lse_c = subgroupShuffle(lse_l, c), delta_c = subgroupShuffle(delta_l, c);
      float z[NC * 4u];
      [[unroll]] for (uint r = 0; r < NC * 4u; ++r) z[r] = 1.0;
      if (DROP != 0u) {
        // Weights (i, jl0 .. jl0 + ROWS - 1) are consecutive elements of the mask.
        const uint e0 = drop_element(b, h, i, jl0);
        const uint off = ALIGN4 != 0u ? 0u : e0 & 3u;
        uvec4 w[NW];
        [[unroll]] for (uint g = 0; g < NW; ++g)
          w[g] = (ALIGN4 != 0u && g == NW - 1u) ? uvec4(0u) : drop_words((e0 >> 2) + g);
        [[unroll]] for (uint g = 0; g < NC; ++g) {
          const vec4 f = drop_factor4(w[g], w[g + 1u], off);
          [[unroll]] for (uint e = 0; e < 4u; ++e) z[4u * g + e] = f[e];
        }
      }
      [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        vec4 ts = vec4(0.0), tp = vec4(0.0);
        [[unroll]] for (uint d = 0; d < DK4; ++d) ts = fma(kr[r][d], qb[d], ts);
        [[unroll]] for (uint d = 0; d < DV4; ++d) tp = fma(vr[r][d], dob[d], tp);
        const float s = (ts.x + ts.y) + (ts.z + ts.w), dp = (tp.x + tp.y) + (tp.z + tp.w);
        const float p = jl0 + r < lim ? exp(s - lse_c) : 0.0;
        const float ds = p * (dp * z[r] - delta_c);
        const float pz = p * z[r];
        [[unroll]] for (uint d = 0; d < DV4; ++d) acc_v[r][d] = fma(vec4(pz), dob[d], acc_v[r][d]);
        [[unroll]] for (uint d = 0; d < DK4; ++d) acc_k[r][d] = fma(vec4(ds), qb[d], acc_k[r][d]);
      }
    }
  }

  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    const uint j = jl0 + r;
    if (j < pc.len_k) {
      const uint kbase = k_at(b, h, j), vbase = v_at(b, h, j);
      [[unroll]] for (uint c = 0; c < DK4; ++c) store_dk4(kbase, c, acc_k[r][c] * pc.scale);
      [[unroll]] for (uint c = 0; c < DV4; ++c) store_dv4(vbase, c, acc_v[r][c]);
    }
  }
}
