#version 450
// Tensor-core matmul on VK_KHR_cooperative_matrix (every vendor's tensor cores), f16 storage: the
// contract of matmul_f16 (C = alpha * op(A) * op(B) + beta * C, both transposes, batched over z
// with strides, epilogues 1 = + bias[n], 2 = relu(. + bias[n]), 3 = + R[m, n]), the same
// bindings, push constants and specialization-constant ids 0-11, so engine/ops/matmul.cpp builds
// it from the same spec. fp16 products, fp32 accumulation and epilogue, C stored as fp16 (or
// fp32: C_F32 below).
//
// Built the way fast Vulkan coopmat kernels are (ggml's mul_mm.comp with COOPMAT, CUTLASS's
// SIMT-staged mma kernels):
// - a workgroup computes a BM x BN tile of C with (BM / WM) x (BN / WN) subgroups, each owning a
//   WM x WN block, a grid of (WM / FRAG_M) x (WN / FRAG_N) accumulator fragments, so that each
//   operand fragment loaded from shared memory feeds several products;
// - each BK step, op(A)'s and op(B)'s tiles are staged in shared memory as fp16, in the
//   operands' own memory order, 16 bytes (8 halves) per load and per store, with zeros outside
//   [m, k] and [k, n] (fragments then never see an edge, and the zeros add nothing);
// - rows are padded by 8 halves: row starts stay 16-byte aligned (fragment loads want it) and
//   consecutive rows start 16 bytes further round the banks, so the 8 rows a fragment load reads
//   at once hit distinct banks;
// - the next k-step's tiles are read from global memory into registers before the products of
//   the current one, so their latency hides behind the tensor-core work; with one buffer of
//   shared memory they are stored after the products, between two barriers, with two
//   (STAGES = 2) into the other buffer, before the step's one barrier;
// - every loop with a constant trip count is [[unroll]]: NVIDIA's compiler left the fragment
//   loops (trip counts made of specialization constants) rolled, which put the fragment arrays
//   in local memory and ran the kernel at a fifth of its rate;
// - the epilogue goes through a per-subgroup fp32 scratch (aliasing the tiles once the loop is
//   done), because a fragment's element-to-lane mapping is opaque: the scratch tells each lane
//   which (row, column) it holds, for the bias, the bounded store and 16-byte stores of C.
//
// Variants (shaders/common/coopmat_khr_fragment.glsl): matmul_coopmat_khr, built only where
// glslc knows GL_KHR_cooperative_matrix (cmake/shaders.cmake) and run where the device lists an
// fp16 x fp16 + fp32 subgroup shape that divides the tiles; matmul_coopmat_khr_rolled, the same
// without the unroll attributes, for CPU devices; matmul_coopmat_khr_emulated, the same kernel
// (unrolled) with 16x16x16 fragment products in plain arithmetic, which the tests run on any
// device.
// vkf-variant-only
// vkf-variant: matmul_coopmat_khr VKF_COOPMAT_KHR=1
// vkf-variant: matmul_coopmat_khr_rolled VKF_COOPMAT_KHR=1 VKF_ROLLED=1
// vkf-variant: matmul_coopmat_khr_emulated VKF_COOPMAT_EMULATED=1
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

// UNROLL on every loop with a constant trip count (see above). matmul_coopmat_khr_rolled leaves
// them to the compiler: what CPU devices run (engine/ops/matmul.cpp), as lavapipe's LLVM takes
// minutes to compile the unrolled kernel for no gain there.
#ifdef VKF_ROLLED
#define UNROLL
#else
#define UNROLL [[unroll]]
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 64;  // one subgroup's block of C [WM, WN]
layout(constant_id = 5) const uint WN = 64;
// constant_id 6 (SHARED on the other paths) is unused: this path always stages.
layout(constant_id = 7) const uint TRANS_A = 0;
layout(constant_id = 8) const uint TRANS_B = 0;
layout(constant_id = 9) const uint EPILOGUE = 0;
// 16-byte (8-half) global accesses where every run of 8 along the contiguous dimension is
// aligned (row and batch strides multiples of 8, binding offset of 16 bytes): bit 0 A, bit 1 B,
// bit 2 C (stores, and reads for beta), bit 3 the residual R. Runs that cross the matrix edge
// fall back to scalar accesses.
layout(constant_id = 10) const uint VEC = 0;
layout(constant_id = 11) const uint READ_C = 0;  // beta != 0
// constant_id 12-14: the fragment shape (coopmat_khr_fragment.glsl).
// The workgroup size (constant_id 0) again: it sizes the prefetch registers below.
layout(constant_id = 15) const uint WG = 128;
// Benchmarks only (MatmulArgs::khr_diagnostic; the results are then wrong): bit 0 drops the
// k-loop's global reads (every step re-stages the first step's tiles), bit 1 its barriers and
// staging (every step multiplies the first step's tiles), bit 2 the fragment loads as well (the
// first fragments, loaded once, are multiplied every time; implies bit 1). Timing the kernel with
// each part removed says which part sets its pace on a driver no profiler reaches. 0 everywhere
// else.
layout(constant_id = 16) const uint DIAG = 0;
const bool DIAG_NO_STAGING = (DIAG & 6) != 0, DIAG_NO_FRAGMENT_LOADS = (DIAG & 4) != 0;
// Staging buffers (MatmulConfig::stages): 1, or 2 to store the next k-step's tiles into the
// other buffer during this one's products, with one barrier a step.
layout(constant_id = 17) const uint STAGES = 1;
// C stored as fp32 through the C32 view of its binding: a split-k slice's partial product
// (engine/ops/matmul.cpp), with alpha 1, beta 0 and no epilogue; scalar stores.
layout(constant_id = 18) const uint C_F32 = 0;

#include "coopmat_khr_fragment.glsl"

layout(std430, binding = 0) restrict readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) restrict readonly buffer B { float16_t b[]; };
layout(std430, binding = 0) restrict readonly buffer A8 { uvec4 a8[]; };
layout(std430, binding = 1) restrict readonly buffer B8 { uvec4 b8[]; };
layout(std430, binding = 2) buffer C { float16_t c[]; };
layout(std430, binding = 2) buffer C8 { uvec4 c8[]; };
layout(std430, binding = 2) buffer C32 { float c32[]; };
// bias [N] for epilogues 1 and 2, R for epilogue 3, unused (any buffer) otherwise.
layout(std430, binding = 3) restrict readonly buffer X { float16_t x[]; };
layout(std430, binding = 3) restrict readonly buffer X8 { uvec4 x8[]; };

layout(push_constant) uniform Push {
  uint m, n, k;
  uint lda, ldb, ldc;
  uint stride_a, stride_b, stride_c;
  float alpha, beta;
} p;

const uint FM = WM / FRAG_M, FN = WN / FRAG_N;
const uint SG_COLS = BN / WN;
const uint NSG = (BM / WM) * (BN / WN);
// Staged tiles in smem (uvec4 = 8 halves), [outer][inner / 8 + 1] with inner the operand's
// contiguous dimension and one uvec4 of padding per row:
//   A: [BM][BK] (k contiguous), or [BK][BM] when TRANS_A (m contiguous; loaded column-major).
//   B: [BK][BN] (n contiguous), or [BN][BK] when TRANS_B (k contiguous; loaded column-major).
const uint A_INNER = TRANS_A != 0 ? BM : BK;
const uint A_OUTER = TRANS_A != 0 ? BK : BM;
const uint B_INNER = TRANS_B != 0 ? BK : BN;
const uint B_OUTER = TRANS_B != 0 ? BN : BK;
const uint A_RUNS = A_INNER / 8, B_RUNS = B_INNER / 8;  // 8-half runs per staged row
const uint A_LDV = A_RUNS + 1, B_LDV = B_RUNS + 1;
const uint A_VECS = A_OUTER * A_RUNS, B_VECS = B_OUTER * B_RUNS;
const uint A_PER = (A_VECS + WG - 1) / WG, B_PER = (B_VECS + WG - 1) / WG;
const uint A_OFF = 0, B_OFF = A_OUTER * A_LDV;
const uint TILES = B_OFF + B_OUTER * B_LDV;
// The epilogue's scratch, per subgroup one row of fragments [FRAG_M][WN] fp32 (4 a uvec4).
const uint SCR_LD = WN / 4;
const uint SCR_SG = FRAG_M * SCR_LD;
const uint SCRATCH = NSG * SCR_SG;
shared uvec4 smem[STAGES * TILES > SCRATCH ? STAGES * TILES : SCRATCH];

uvec4 ra[A_PER], rb[B_PER];  // the next step's tiles, in flight

uvec4 pack8(float16_t h[8]) {
  return uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),
               packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
}

// Halves (row, col .. col + 7) of a stored operand [rows][cols] with row stride ld, zero where
// they do not exist. A macro for A and B, as GLSL cannot pass buffers.
#define READ_RUN(NAME, buf, buf8, VEC_BIT, LD)                               \
  uvec4 NAME(uint base, uint row, uint col, uint rows, uint cols) {          \
    if (row >= rows || col >= cols) return uvec4(0);                         \
    const uint at = base + row * (LD) + col;                                 \
    if ((VEC & VEC_BIT) != 0 && col + 8 <= cols) return buf8[at / 8];        \
    float16_t h[8];                                                          \
    UNROLL for (uint e = 0; e < 8; ++e) {                                           \
      h[e] = float16_t(0.0);                                                 \
      if (col + e < cols) h[e] = buf[at + e];                                \
    }                                                                        \
    return pack8(h);                                                         \
  }
READ_RUN(read_a, a, a8, 1, p.lda)
READ_RUN(read_b, b, b8, 2, p.ldb)

// Reads the k-step at k0 of op(A)'s rows m0.. and op(B)'s columns n0.. into ra, rb.
// The guards below are constant false where the tiles divide evenly among the workgroup (every
// table row): the loops then have constant trip counts and unroll, keeping ra and rb in
// registers; a data-dependent exit could leave them indexed at run time, which puts an array
// in local memory on some compilers (NVIDIA's among them).
void load_tiles(uint k0, uint m0, uint n0, uint base_a, uint base_b) {
  UNROLL for (uint j = 0; j < A_PER; ++j) {
    const uint v = gl_LocalInvocationID.x + j * WG;
    if (A_VECS % WG != 0 && v >= A_VECS) break;
    const uint o = v / A_RUNS, i = (v % A_RUNS) * 8;
    ra[j] = TRANS_A != 0 ? read_a(base_a, k0 + o, m0 + i, p.k, p.m)
                         : read_a(base_a, m0 + o, k0 + i, p.m, p.k);
  }
  UNROLL for (uint j = 0; j < B_PER; ++j) {
    const uint v = gl_LocalInvocationID.x + j * WG;
    if (B_VECS % WG != 0 && v >= B_VECS) break;
    const uint o = v / B_RUNS, i = (v % B_RUNS) * 8;
    rb[j] = TRANS_B != 0 ? read_b(base_b, n0 + o, k0 + i, p.n, p.k)
                         : read_b(base_b, k0 + o, n0 + i, p.k, p.n);
  }
}

// Stores ra, rb into the staging buffer that starts at `base` (0, or TILES for the second).
void store_tiles(uint base) {
  UNROLL for (uint j = 0; j < A_PER; ++j) {
    const uint v = gl_LocalInvocationID.x + j * WG;
    if (A_VECS % WG != 0 && v >= A_VECS) break;
    smem[base + A_OFF + (v / A_RUNS) * A_LDV + v % A_RUNS] = ra[j];
  }
  UNROLL for (uint j = 0; j < B_PER; ++j) {
    const uint v = gl_LocalInvocationID.x + j * WG;
    if (B_VECS % WG != 0 && v >= B_VECS) break;
    smem[base + B_OFF + (v / B_RUNS) * B_LDV + v % B_RUNS] = rb[j];
  }
}

// This subgroup's operand fragments fa[FM], fb[FN] for the k-offset kk of the tiles staged at
// `base`: rows wm0.. of op(A), columns wn0.. of op(B). A macro, not a function, so that no copy
// of the fragment arrays stands between the loads and the products.
#define LOAD_FRAGMENTS(fa, fb, base, wm0, wn0, kk)                               \
  UNROLL for (uint i_ = 0; i_ < FM; ++i_) {                                  \
    const uint r_ = (wm0) + i_ * FRAG_M;                                         \
    if (TRANS_A != 0)                                                            \
      FRAG_LOAD_COL(fa[i_], (base) + A_OFF + (kk) * A_LDV + r_ / 8, A_LDV);      \
    else                                                                         \
      FRAG_LOAD_ROW(fa[i_], (base) + A_OFF + r_ * A_LDV + (kk) / 8, A_LDV);      \
  }                                                                              \
  UNROLL for (uint j_ = 0; j_ < FN; ++j_) {                                  \
    const uint c_ = (wn0) + j_ * FRAG_N;                                         \
    if (TRANS_B != 0)                                                            \
      FRAG_LOAD_COL(fb[j_], (base) + B_OFF + c_ * B_LDV + (kk) / 8, B_LDV);      \
    else                                                                         \
      FRAG_LOAD_ROW(fb[j_], (base) + B_OFF + (kk) * B_LDV + c_ / 8, B_LDV);      \
  }

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint z = gl_WorkGroupID.z;
  const uint base_a = z * p.stride_a, base_b = z * p.stride_b, base_c = z * p.stride_c;
  const uint sg = SG_ID;
  const uint wm0 = (sg / SG_COLS) * WM, wn0 = (sg % SG_COLS) * WN;  // this subgroup's block

  FRAG_ACC acc[FM][FN];
  UNROLL for (uint i = 0; i < FM; ++i)
    UNROLL for (uint j = 0; j < FN; ++j) FRAG_ZERO(acc[i][j]);

  load_tiles(0, m0, n0, base_a, base_b);
  store_tiles(0);
  barrier();
  FRAG_A fa[FM];
  FRAG_B fb[FN];
  if (DIAG_NO_FRAGMENT_LOADS) {
    LOAD_FRAGMENTS(fa, fb, 0, wm0, wn0, 0)
  }
  uint current = 0;  // the staging buffer this step multiplies (0 or TILES)
  for (uint k0 = 0; k0 < p.k; k0 += BK) {
    // Uniform across the workgroup, so the barriers below are too.
    const bool more = k0 + BK < p.k;
    if (more && (DIAG & 1) == 0) load_tiles(k0 + BK, m0, n0, base_a, base_b);
    UNROLL for (uint kk = 0; kk < BK; kk += FRAG_K) {
      if (!DIAG_NO_FRAGMENT_LOADS) {
        LOAD_FRAGMENTS(fa, fb, current, wm0, wn0, kk)
      }
      UNROLL for (uint i = 0; i < FM; ++i)
        UNROLL for (uint j = 0; j < FN; ++j) FRAG_MUL_ADD(acc[i][j], fa[i], fb[j]);
    }
    if (DIAG_NO_STAGING) continue;
    if (STAGES == 2) {
      // The other buffer was last read a step ago, before the barrier that ended that step.
      if (more) store_tiles(TILES - current);
      barrier();  // the stores are seen; after the last step, the scratch may alias the tiles
      current = TILES - current;
    } else {
      barrier();  // every subgroup is done with the tiles
      if (more) {
        store_tiles(0);
        barrier();
      }
    }
  }
  if (DIAG_NO_STAGING) barrier();  // the scratch below aliases the tiles

  // Epilogue, one row of fragments at a time through this subgroup's scratch (which aliases the
  // tiles: the loop ended with a barrier). Lane l takes runs l, l + S, ... of 8 columns.
  const uint scr = sg * SCR_SG;
  const uint RUNS = WN / 8;
  UNROLL for (uint i = 0; i < FM; ++i) {
    UNROLL for (uint j = 0; j < FN; ++j) FRAG_STORE(acc[i][j], scr + j * (FRAG_N / 4), SCR_LD);
    SG_BARRIER();  // the stores' elements belong to other lanes
    for (uint q = SG_LANE; q < FRAG_M * RUNS; q += SG_SIZE) {
      const uint row = m0 + wm0 + i * FRAG_M + q / RUNS, col = n0 + wn0 + (q % RUNS) * 8;
      if (row >= p.m || col >= p.n) continue;
      const uint s = scr + (q / RUNS) * SCR_LD + (q % RUNS) * 2;
      const uvec4 lo = smem[s], hi = smem[s + 1];
      float v[8] = float[8](uintBitsToFloat(lo.x), uintBitsToFloat(lo.y), uintBitsToFloat(lo.z),
                            uintBitsToFloat(lo.w), uintBitsToFloat(hi.x), uintBitsToFloat(hi.y),
                            uintBitsToFloat(hi.z), uintBitsToFloat(hi.w));
      const uint ci = base_c + row * p.ldc + col;
      const uint valid = min(p.n - col, 8u);
      // READ_C is set only for beta != 0: with beta == 0, C may hold garbage (NaN * 0 is NaN).
      if (READ_C != 0) {
        if ((VEC & 4) != 0 && valid == 8) {
          const uvec4 w = c8[ci / 8];
          UNROLL for (uint e = 0; e < 4; ++e) {
            const vec2 h = vec2(unpackFloat2x16(w[e]));
            v[2 * e] = p.alpha * v[2 * e] + p.beta * h.x;
            v[2 * e + 1] = p.alpha * v[2 * e + 1] + p.beta * h.y;
          }
        } else {
          for (uint e = 0; e < valid; ++e) v[e] = p.alpha * v[e] + p.beta * float(c[ci + e]);
        }
      } else {
        UNROLL for (uint e = 0; e < 8; ++e) v[e] *= p.alpha;
      }
      if (EPILOGUE == 1 || EPILOGUE == 2)
        for (uint e = 0; e < valid; ++e) v[e] += float(x[col + e]);
      if (EPILOGUE == 2)
        UNROLL for (uint e = 0; e < 8; ++e) v[e] = max(v[e], 0.0);
      if (EPILOGUE == 3) {
        if ((VEC & 8) != 0 && valid == 8) {
          const uvec4 w = x8[ci / 8];
          UNROLL for (uint e = 0; e < 4; ++e) {
            const vec2 h = vec2(unpackFloat2x16(w[e]));
            v[2 * e] += h.x;
            v[2 * e + 1] += h.y;
          }
        } else {
          for (uint e = 0; e < valid; ++e) v[e] += float(x[ci + e]);
        }
      }
      if (C_F32 != 0) {
        for (uint e = 0; e < valid; ++e) c32[ci + e] = v[e];
      } else if ((VEC & 4) != 0 && valid == 8) {
        float16_t h[8];
        UNROLL for (uint e = 0; e < 8; ++e) h[e] = float16_t(v[e]);
        c8[ci / 8] = pack8(h);
      } else {
        for (uint e = 0; e < valid; ++e) c[ci + e] = float16_t(v[e]);
      }
    }
    SG_BARRIER();  // before the next row of fragments overwrites the scratch
  }
}
