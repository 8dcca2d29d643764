#version 450
// Tensor-core variant of shaders/matmul.comp for NVIDIA (GL_NV_cooperative_matrix), f16 storage:
// the same contract as matmul_f16 (C = alpha * op(A) * op(B) + beta * C, both transposes,
// batched over z with strides, epilogues 1 = + bias[n], 2 = relu(. + bias[n]), 3 = + R[m, n]),
// the same bindings, push constants and specialization-constant ids, so engine/ops/matmul.cpp
// builds both from one spec. A and B are multiplied as fp16 16x16x16 fragments with fp32
// accumulation; the epilogue is fp32 and C is stored as fp16, as matmul_f16 does.
//
// A workgroup computes a BM x BN tile of C with (BM / WM) x (BN / WN) subgroups, each owning a
// WM x WN block of (WM / 16) x (WN / 16) accumulator fragments (spec constants 4 and 5, which
// are TM and TN on the other paths). The wrapper checks that the workgroup is exactly that many
// subgroups. Per BK step, the workgroup stages op(A)'s BM x BK and op(B)'s BK x BN tiles in
// shared memory in the operands' own memory order (so global reads and shared writes are both
// contiguous), with zeros outside [m, k] and [k, n]: fragments then never see an edge, and the
// zeros add nothing. Accumulators go through a per-subgroup 16x16 fp32 scratch in shared memory
// on their way out, because the element-to-lane mapping of a fragment is opaque: only the scratch
// tells a lane which (row, column) it holds, which the bounded store and the epilogue need.
//
// Two variants (shaders/common/coopmat_fragment.glsl): matmul_coopmat on tensor cores, built only
// where glslc knows GL_NV_cooperative_matrix (cmake/shaders.cmake) and run only where the device
// lists a subgroup-scope 16x16x16 fp16 x fp16 + fp32 shape (DeviceInfo::nv_coopmat_f16_16x16x16);
// matmul_coopmat_emulated, the same kernel with the fragment products in plain arithmetic, which
// the tests run on any device to check everything but the tensor-core instructions themselves.
// vkf-variant-only
// vkf-variant: matmul_coopmat VKF_COOPMAT_NV=1
// vkf-variant: matmul_coopmat_emulated VKF_COOPMAT_EMULATED=1
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_GOOGLE_include_directive : require
#include "coopmat_fragment.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 32;  // one subgroup's block of C [WM, WN]
layout(constant_id = 5) const uint WN = 32;
// constant_id 6 (SHARED on the other paths) is unused: this path always stages.
layout(constant_id = 7) const uint TRANS_A = 0;
layout(constant_id = 8) const uint TRANS_B = 0;
layout(constant_id = 9) const uint EPILOGUE = 0;
// Bit 0: A, bit 1: B may be read as 4-vectors along their contiguous dimension (row and batch
// strides multiples of 4); runs that cross the matrix edge fall back to scalar reads.
layout(constant_id = 10) const uint VEC = 0;
layout(constant_id = 11) const uint READ_C = 0;  // beta != 0

layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B { float16_t b[]; };
layout(std430, binding = 0) readonly buffer A4 { f16vec4 a4[]; };
layout(std430, binding = 1) readonly buffer B4 { f16vec4 b4[]; };
layout(std430, binding = 2) buffer C { float16_t c[]; };
// bias [N] for epilogues 1 and 2, R for epilogue 3, unused (any buffer) otherwise.
layout(std430, binding = 3) readonly buffer X { float16_t x[]; };

layout(push_constant) uniform Push {
  uint m, n, k;
  uint lda, ldb, ldc;
  uint stride_a, stride_b, stride_c;
  float alpha, beta;
} p;

const uint F = 16;  // fragment edge: the M = N = K = 16 shape
const uint FM = WM / F, FN = WN / F;
const uint SG_COLS = BN / WN;
const uint NSG = (BM / WM) * (BN / WN);
// 8 halves of padding per staged row: keeps every row start 16-byte aligned (fragment loads
// want that) and staggers the rows across shared-memory banks.
const uint PAD = 8;
// Staged tiles, [outer][inner + PAD] with inner the operand's contiguous dimension:
//   A: [BM][BK] (k contiguous), or [BK][BM] when TRANS_A (m contiguous; loaded column-major).
//   B: [BK][BN] (n contiguous), or [BN][BK] when TRANS_B (k contiguous; loaded column-major).
const uint A_INNER = TRANS_A != 0 ? BM : BK;
const uint A_OUTER = TRANS_A != 0 ? BK : BM;
const uint B_INNER = TRANS_B != 0 ? BK : BN;
const uint B_OUTER = TRANS_B != 0 ? BN : BK;
const uint A_LD = A_INNER + PAD;
const uint B_LD = B_INNER + PAD;
shared float16_t as[A_OUTER * A_LD];
shared float16_t bs[B_OUTER * B_LD];
shared float cs[NSG * F * F];  // one 16x16 fp32 scratch per subgroup for the epilogue

// Stages rows o0 .. o0 + outer - 1, columns g0 .. g0 + inner - 1 of a stored operand (row stride
// ld) at tile[o * tile_ld + i]; outer_lim / inner_lim count the rows and columns that exist.
// A macro because GLSL cannot pass buffers or shared arrays to functions.
#define STAGE(tile, src, src4, vec_ok, base, ld, o0, g0, OUTER, INNER, TILE_LD, outer_lim,     \
              inner_lim)                                                                       \
  for (uint idx = gl_LocalInvocationID.x; idx < (OUTER) * ((INNER) / 4);                       \
       idx += gl_WorkGroupSize.x) {                                                            \
    const uint o = idx / ((INNER) / 4), i = (idx % ((INNER) / 4)) * 4;                         \
    const uint at = (base) + ((o0) + o) * (ld) + (g0) + i;                                     \
    f16vec4 v = f16vec4(0.0hf);                                                                \
    if (o < (outer_lim)) {                                                                     \
      if ((vec_ok) && i + 4 <= (inner_lim)) {                                                  \
        v = src4[at / 4];                                                                      \
      } else {                                                                                 \
        for (uint e = 0; e < 4; ++e)                                                           \
          if (i + e < (inner_lim)) v[e] = src[at + e];                                         \
      }                                                                                        \
    }                                                                                          \
    const uint t = o * (TILE_LD) + i;                                                          \
    tile[t] = v.x;                                                                             \
    tile[t + 1] = v.y;                                                                         \
    tile[t + 2] = v.z;                                                                         \
    tile[t + 3] = v.w;                                                                         \
  }

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint z = gl_WorkGroupID.z;
  const uint base_a = z * p.stride_a, base_b = z * p.stride_b, base_c = z * p.stride_c;
  const uint sg = SG_ID;
  const uint wm0 = (sg / SG_COLS) * WM, wn0 = (sg % SG_COLS) * WN;  // this subgroup's block

  FRAG_ACC acc[FM][FN];
  for (uint i = 0; i < FM; ++i)
    for (uint j = 0; j < FN; ++j) FRAG_ZERO(acc[i][j]);

  for (uint k0 = 0; k0 < p.k; k0 += BK) {
    // m0 < m, n0 < n and k0 < k here, so the limits below do not wrap.
    if (TRANS_A != 0) {
      STAGE(as, a, a4, (VEC & 1) != 0, base_a, p.lda, k0, m0, BK, BM, A_LD, p.k - k0, p.m - m0)
    } else {
      STAGE(as, a, a4, (VEC & 1) != 0, base_a, p.lda, m0, k0, BM, BK, A_LD, p.m - m0, p.k - k0)
    }
    if (TRANS_B != 0) {
      STAGE(bs, b, b4, (VEC & 2) != 0, base_b, p.ldb, n0, k0, BN, BK, B_LD, p.n - n0, p.k - k0)
    } else {
      STAGE(bs, b, b4, (VEC & 2) != 0, base_b, p.ldb, k0, n0, BK, BN, B_LD, p.k - k0, p.n - n0)
    }
    barrier();
    for (uint kk = 0; kk < BK; kk += F) {
      FRAG_A fa[FM];
      FRAG_B fb[FN];
      for (uint i = 0; i < FM; ++i) {
        const uint r = wm0 + i * F;
        if (TRANS_A != 0)
          FRAG_LOAD_A(fa[i], kk * A_LD + r, A_LD, true);
        else
          FRAG_LOAD_A(fa[i], r * A_LD + kk, A_LD, false);
      }
      for (uint j = 0; j < FN; ++j) {
        const uint col = wn0 + j * F;
        if (TRANS_B != 0)
          FRAG_LOAD_B(fb[j], col * B_LD + kk, B_LD, true);
        else
          FRAG_LOAD_B(fb[j], kk * B_LD + col, B_LD, false);
      }
      for (uint i = 0; i < FM; ++i)
        for (uint j = 0; j < FN; ++j) FRAG_MUL_ADD(acc[i][j], fa[i], fb[j]);
    }
    barrier();  // the next step overwrites the tiles
  }

  // Epilogue, one fragment at a time through this subgroup's scratch: lane l takes elements
  // l, l + S, ... of the row-major 16x16 block, so each pass writes two 16-wide row runs.
  const uint scratch = sg * F * F;
  for (uint i = 0; i < FM; ++i) {
    for (uint j = 0; j < FN; ++j) {
      FRAG_STORE(acc[i][j], scratch);
      SG_BARRIER();  // the store's elements belong to other lanes
      const uint r0 = m0 + wm0 + i * F, c0 = n0 + wn0 + j * F;
      for (uint e = SG_LANE; e < F * F; e += SG_SIZE) {
        const uint row = r0 + e / F, col = c0 + e % F;
        if (row >= p.m || col >= p.n) continue;
        const uint ci = base_c + row * p.ldc + col;
        float v = p.alpha * cs[scratch + e];
        // READ_C is set only for beta != 0: with beta == 0, C may hold garbage (NaN * 0 is NaN).
        if (READ_C != 0) v += p.beta * float(c[ci]);
        if (EPILOGUE == 1 || EPILOGUE == 2) v += float(x[col]);
        if (EPILOGUE == 2) v = max(v, 0.0);
        if (EPILOGUE == 3) v += float(x[ci]);
        c[ci] = float16_t(v);
      }
      SG_BARRIER();  // before the next fragment overwrites the scratch
    }
  }
}
