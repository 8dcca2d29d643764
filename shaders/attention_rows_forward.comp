#version 450
// Fused attention forward for CPU devices (the "rows" path; attention_forward.comp is the tiled
// GPU path, same arguments and results): O = softmax(Q K^T * scale + mask) V with dropout on the
// weights, and LSE = m + log(l) per row (0 and O = 0 for a row that sees no key).
// The workgroup is one subgroup of WG lanes; lane `lane` owns query rows i0 + r * WG + lane,
// r < ROWS, and keeps their Q (pre-scaled), running max m, running sum l and output accumulator
// in registers. Keys stream in blocks of WG: lane c gathers key row j0 + c of K and V (4-vector
// reads where VEC allows), subgroupShuffle hands row c to every lane, and each lane updates its
// rows with an online softmax over the block. No shared memory and no barrier, every array index
// a constant after unrolling: on llvmpipe each lane's loads are a scalar loop over the lanes and
// a barrier is a coroutine switch, so the shared-memory tiles of the GPU kernel only cost there.
// Grid: (ceil(len_q / (WG * ROWS)), heads, batch).
// vkf-variant: attention_rows_forward_f16 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#define ATT_BINDING_LENGTHS 5
#define ATT_ROWS 1
#include "attention_common.glsl"

layout(std430, binding = 0) readonly buffer Qb { ATT_T q[]; };
layout(std430, binding = 0) readonly buffer Q4b { ATT_T4 q4[]; };
layout(std430, binding = 1) readonly buffer Kb { ATT_T k[]; };
layout(std430, binding = 1) readonly buffer K4b { ATT_T4 k4[]; };
layout(std430, binding = 2) readonly buffer Vb { ATT_T v[]; };
layout(std430, binding = 2) readonly buffer V4b { ATT_T4 v4[]; };
layout(std430, binding = 3) writeonly buffer Ob { ATT_T o[]; };
layout(std430, binding = 3) writeonly buffer O4b { ATT_T4 o4[]; };
layout(std430, binding = 4) writeonly buffer Lb { float lse[]; };

ATT_ROW_LOADER(load_q4, q, q4, VEC_Q, DK)
ATT_ROW_LOADER(load_k4, k, k4, VEC_K, DK)
ATT_ROW_LOADER(load_v4, v, v4, VEC_V, DV)
ATT_ROW_STORER(store_o4, o, o4, VEC_O, DV)

const uint S = WG;
const uint NW = S / 4u + 1u;  // Philox blocks a run of S weights touches

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint b = gl_WorkGroupID.z, h = gl_WorkGroupID.y;
  const uint i0 = gl_WorkGroupID.x * (S * ROWS);
  const uint klim = key_limit(b), qlim = query_limit(b);
  // Keys any row of this workgroup can see; uniform over the subgroup.
  uint kend = i0 >= qlim ? 0u : klim;
  if ((pc.flags & F_CAUSAL) != 0u) kend = min(kend, min(i0 + S * ROWS, qlim));

  vec4 qr[ROWS][DK4];
  vec4 acc[ROWS][DV4];
  float m[ROWS], l[ROWS];
  uint lim[ROWS];
  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    uint i = i0 + r * S + lane;
    lim[r] = row_limit(i, klim, qlim);
    uint base = q_at(b, h, min(i, pc.len_q - 1u));
    [[unroll]] for (uint c = 0; c < DK4; ++c) qr[r][c] = load_q4(base, c) * pc.scale;
    [[unroll]] for (uint c = 0; c < DV4; ++c) acc[r][c] = vec4(0.0);
    m[r] = -1e30;
    l[r] = 0.0;
  }

  for (uint j0 = 0; j0 < kend; j0 += S) {
    // Lane `lane` fetches key row j0 + lane (clamped: rows past kend are masked below).
    const uint jl = min(j0 + lane, kend - 1u);
    vec4 kr[DK4], vr[DV4];
    const uint kbase = k_at(b, h, jl), vbase = v_at(b, h, jl);
    [[unroll]] for (uint c = 0; c < DK4; ++c) kr[c] = load_k4(kbase, c);
    [[unroll]] for (uint c = 0; c < DV4; ++c) vr[c] = load_v4(vbase, c);

    float p[ROWS][S];
    [[unroll]] for (uint c = 0; c < S; ++c) {
      vec4 kb[DK4];
      [[unroll]] for (uint d = 0; d < DK4; ++d) kb[d] = subgroupShuffle(kr[d], c);
      [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        vec4 t = vec4(0.0);
        [[unroll]] for (uint d = 0; d < DK4; ++d) t = fma(qr[r][d], kb[d], t);
        p[r][c] = (t.x + t.y) + (t.z + t.w);
      }
    }
    // Online softmax of each row over the block; the sum l stays undropped (dropout scales the
    // normalised weights).
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
      float mx = m[r];
      [[unroll]] for (uint c = 0; c < S; ++c) mx = max(mx, j0 + c < lim[r] ? p[r][c] : -1e30);
      const float alpha = exp(m[r] - mx);
      float sum = 0.0;
      [[unroll]] for (uint c = 0; c < S; ++c) {
        float e = j0 + c < lim[r] ? exp(p[r][c] - mx) : 0.0;
        sum += e;
        p[r][c] = e;
      }
      l[r] = l[r] * alpha + sum;
      m[r] = mx;
      [[unroll]] for (uint d = 0; d < DV4; ++d) acc[r][d] *= alpha;
      if (DROP != 0u) {
        // Weights (i, j0 .. j0 + S - 1) are consecutive elements of the mask.
        const uint e0 = drop_element(b, h, i0 + r * S + lane, j0);
        const uint off = ALIGN4 != 0u ? 0u : e0 & 3u;
        uvec4 w[NW];
        [[unroll]] for (uint g = 0; g < NW; ++g)
          w[g] = (ALIGN4 != 0u && g == NW - 1u) ? uvec4(0u) : drop_words((e0 >> 2) + g);
        [[unroll]] for (uint g = 0; g < S / 4u; ++g) {
          const vec4 z = drop_factor4(w[g], w[g + 1u], off);
          [[unroll]] for (uint e = 0; e < 4u; ++e) p[r][4u * g + e] *= z[e];
        }
      }
    }
    [[unroll]] for (uint c = 0; c < S; ++c) {
      vec4 vb[DV4];
      [[unroll]] for (uint d = 0; d < DV4; ++d) vb[d] = subgroupShuffle(vr[d], c);
      [[unroll]] for (uint r = 0; r < ROWS; ++r)
        [[unroll]] for (uint d = 0; d < DV4; ++d) acc[r][d] = fma(vec4(p[r][c]), vb[d], acc[r][d]);
    }
  }

  [[unroll]] for (uint r = 0; r < ROWS; ++r) {
    uint i = i0 + r * S + lane;
    if (i < pc.len_q) {
      const float inv = l[r] > 0.0 ? 1.0 / l[r] : 0.0;
      const uint base = o_at(b, h, i);
      [[unroll]] for (uint c = 0; c < DV4; ++c) store_o4(base, c, acc[r][c] * inv);
      lse[row_at(b, h, i)] = l[r] > 0.0 ? m[r] + log(l[r]) : 0.0;
    }
  }
}
