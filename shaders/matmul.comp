#version 450
// C = alpha * op(A) * op(B) + beta * C, then an optional fused epilogue, batched over z.
//   op(A): [M, K]; stored [M, K] (row stride lda), or [K, M] when TRANS_A.
//   op(B): [K, N]; stored [K, N] (row stride ldb), or [N, K] when TRANS_B (PyTorch Linear W).
//   C:     [M, N], row stride ldc. Batch item z starts at z * stride_{a,b,c} elements.
// Epilogues (after alpha/beta): 1 = + bias[n], 2 = relu(. + bias[n]), 3 = + R[m, n] where R has
// C's layout (ldc, stride_c).
// Two code paths, chosen by the SHARED specialization constant (see engine/ops/matmul_tuning.h):
//   SHARED = 1: BM x BK and BK x BN tiles staged in shared memory, each thread accumulating a
//               TM x TN register block (GPUs).
//   SHARED = 0: each thread reads its operands straight from the buffers into a TM x TN register
//               block. On CPU devices (lavapipe) shared memory is ordinary memory behind
//               per-lane address arithmetic plus a barrier, so it only costs.
// SHARED = 0 needs the workgroup to be exactly one subgroup.
// Arithmetic and accumulation are fp32; the f16 variant only stores A, B, C, bias, R as fp16.
// vkf-variant: matmul_f16 VKF_FP16=1
// vkf-variant: matmul_texel VKF_TEXEL=1
// vkf-variant: matmul_f16_texel VKF_FP16=1 VKF_TEXEL=1
// The _noshuffle variants leave out the direct path (SHARED = 0) and with it the subgroup-shuffle
// capability, which a device that lists basic subgroup operations only cannot create a pipeline
// with (VP_LUNARG_desktop_baseline_2023); the engine runs them on shared-memory rows only.
// vkf-variant: matmul_noshuffle VKF_NO_SHUFFLE=1
// vkf-variant: matmul_f16_noshuffle VKF_FP16=1 VKF_NO_SHUFFLE=1
// vkf-variant: matmul_texel_noshuffle VKF_TEXEL=1 VKF_NO_SHUFFLE=1
// vkf-variant: matmul_f16_texel_noshuffle VKF_FP16=1 VKF_TEXEL=1 VKF_NO_SHUFFLE=1
#extension GL_GOOGLE_include_directive : require
#ifdef VKF_FP16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#define STORE4_T f16vec4
#else
#define STORE_T float
#define STORE4_T vec4
#endif
#ifndef VKF_NO_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#ifdef VKF_TEXEL
#extension GL_EXT_samplerless_texture_functions : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint SHARED = 1;
layout(constant_id = 7) const uint TRANS_A = 0;
layout(constant_id = 8) const uint TRANS_B = 0;
layout(constant_id = 9) const uint EPILOGUE = 0;
// Direct path: bit 0 reads A (k-contiguous) as 4-vectors along k, bit 1 B (TRANS_B) along k,
// bit 2 B (not TRANS_B) as 4-vectors along n: each lane then owns runs of 4 adjacent columns;
// bit 3 A (TRANS_A) as 4-vectors along m.
layout(constant_id = 10) const uint VEC = 0;
layout(constant_id = 11) const uint READ_C = 0;  // beta != 0
// constant_id 12-17 belong to the KHR kernel. 18: C is stored as fp32 through the C32 view of
// its binding, whatever the operands' storage: a split-k slice's partial product
// (engine/ops/matmul.cpp), which the f16 variant would otherwise round to fp16.
layout(constant_id = 18) const uint C_F32 = 0;

#ifdef VKF_TEXEL
// A and B as uniform texel buffers of 4-vectors (RGBA32F, or RGBA16F for f16 storage): on
// lavapipe each lane's storage-buffer load is a loop over the lanes with a branch per lane,
// where a texel fetch is a branch-free gather. The views cover A and B whole (the wrapper
// checks that their sizes are whole texels); a scalar read takes one component of its texel.
// textureBuffer, not samplerBuffer: a uniform texel buffer takes no sampler, and the combined
// form (OpTypeSampledImage of a Buffer image) draws a SPIR-V validator warning under Mesa 25's
// lavapipe (Vulkan 1.4); texelFetch on it is GL_EXT_samplerless_texture_functions.
layout(binding = 0) uniform textureBuffer a_texels;
layout(binding = 1) uniform textureBuffer b_texels;
vec4 fetch_a4(uint i) { return texelFetch(a_texels, int(i)); }
vec4 fetch_b4(uint i) { return texelFetch(b_texels, int(i)); }
float fetch_a(uint i) { return texelFetch(a_texels, int(i >> 2))[i & 3]; }
float fetch_b(uint i) { return texelFetch(b_texels, int(i >> 2))[i & 3]; }
#else
layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
// 4-vector views of A and B for 4-aligned operands (VEC).
layout(std430, binding = 0) readonly buffer A4 { STORE4_T a4[]; };
layout(std430, binding = 1) readonly buffer B4 { STORE4_T b4[]; };
vec4 fetch_a4(uint i) { return vec4(a4[i]); }
vec4 fetch_b4(uint i) { return vec4(b4[i]); }
float fetch_a(uint i) { return float(a[i]); }
float fetch_b(uint i) { return float(b[i]); }
#endif
layout(std430, binding = 2) buffer C { STORE_T c[]; };
layout(std430, binding = 2) buffer C32 { float c32[]; };
// bias [N] for epilogues 1 and 2, R for epilogue 3, unused (any buffer) otherwise.
layout(std430, binding = 3) readonly buffer X { STORE_T x[]; };

layout(push_constant) uniform Push {
  uint m, n, k;
  uint lda, ldb, ldc;
  uint stride_a, stride_b, stride_c;
  float alpha, beta;
} p;

// Threads of a workgroup form a (BM/TM) x (BN/TN) grid; thread (tm, tn) owns rows
// tm + i * RSTEP and columns tn + j * CSTEP, so neighbouring threads touch neighbouring columns.
const uint CSTEP = BN / TN;
const uint RSTEP = BM / TM;
// VEC bit 2 (direct path, TN a multiple of 4): lane tn owns columns 4 tn .. 4 tn + 3 of each
// run of 4 CSTEP columns, so one 4-vector read of a B row feeds four of its accumulators.
const uint B_RUNS = SHARED == 0 ? (TRANS_B == 0 ? (VEC & 4) : 0) : 0;  // 4 or 0
// The tile column of acc[.][j] for the thread in column tn of the thread grid.
uint tile_col(uint tn, uint j) {
  return B_RUNS != 0 ? 4 * tn + (j & 3) + (j >> 2) * 4 * CSTEP : tn + j * CSTEP;
}
const uint S = gl_WorkGroupSize.x;  // SHARED = 0: the subgroup size
// SHARED = 0: A rows each lane fetches; 1 on the shared path, where TM / S may be 0 (an array
// of size 0 is invalid SPIR-V even where unused).
const uint AROWS = SHARED == 0 ? TM / S : 1;
// VEC bit 3 (direct path, A transposed, so stored [K, M] with rows adjacent): lane l reads rows
// m0 + 4 l + 4 S q .. + 3 at one k as a 4-vector (AQ of them cover the TM rows), instead of
// one row at four k as four loads.
const uint A_RUNS = SHARED == 0 ? (TRANS_A != 0 ? (VEC & 8) : 0) : 0;  // 8 or 0
const uint AQ = SHARED == 0 ? (TM + 4 * S - 1) / (4 * S) : 1;

shared float as[SHARED != 0 ? BK * BM : 1];  // [BK][BM]
shared float bs[SHARED != 0 ? BK * BN : 1];  // [BK][BN]

float load_a(uint base, uint row, uint kk) {
  return fetch_a(base + (TRANS_A != 0 ? kk * p.lda + row : row * p.lda + kk));
}
float load_b(uint base, uint kk, uint col) {
  return fetch_b(base + (TRANS_B != 0 ? col * p.ldb + kk : kk * p.ldb + col));
}

// A(row, kk .. kk + 3) and B(kk .. kk + 3, col): vector reads when VEC allows (kk is then a
// multiple of 4, as are the row and batch strides), else 4 scalar reads.
vec4 load_a4(uint base, uint row, uint kk) {
  if ((VEC & 1) != 0) return fetch_a4((base + row * p.lda + kk) / 4);
  return vec4(load_a(base, row, kk), load_a(base, row, kk + 1), load_a(base, row, kk + 2),
              load_a(base, row, kk + 3));
}
vec4 load_b4(uint base, uint kk, uint col) {
  if ((VEC & 2) != 0) return fetch_b4((base + col * p.ldb + kk) / 4);
  return vec4(load_b(base, kk, col), load_b(base, kk + 1, col), load_b(base, kk + 2, col),
              load_b(base, kk + 3, col));
}

float acc[TM][TN];  // this invocation's C block: rows tm + i * RSTEP, columns tn + j * CSTEP

const uint KV = 1;  // direct path: 4-vectors of k per operand row in the main loop

// Direct path (SHARED = 0), one subgroup per workgroup (WG == subgroup size S, checked by the
// wrapper): all lanes share rows m0 .. m0 + TM - 1 and lane l owns columns n0 + l + S * j (with
// VEC bit 2: the runs n0 + 4 l + 4 S g .. + 3, see tile_col). On
// CPU devices each per-lane buffer load is a scalar loop over the lanes, so A is loaded once per
// S rows (lane l fetches row r * S + l) and handed to all lanes by subgroupShuffle (a register
// permute), k-contiguous operands are read as 4-vectors (VEC bit 0: A, bit 1: B), and k is the
// innermost loop so each accumulator takes 4 * nv FMAs in a register before going back to
// memory (a TM x TN block does not fit in a CPU's registers). Out-of-range rows and columns
// read a clamped (valid) element and are never stored: the inner loop has no branches.
// Accumulates k0 .. k0 + 4 * nv - 1 (nv <= KV, a literal at each call).
#ifndef VKF_NO_SHUFFLE
uint arow[AROWS];  // direct path: the A row this lane fetches for rows r * S .. r * S + S - 1
uint arun[AQ];     // direct path, A_RUNS: the first of the 4 rows this lane reads, per run
uint cols[TN];      // direct path: this lane's columns of C
void direct_chunk(uint base_a, uint base_b, uint k0, uint nv) {
  vec4 ar[AROWS][KV], bv[TN][KV];
  vec4 at[AQ][4 * KV];  // A_RUNS: at[q][4 v + kk] = A rows arun[q] .. + 3 at k0 + 4 v + kk
  for (uint v = 0; v < nv; ++v) {
    if (A_RUNS != 0) {
      for (uint q = 0; q < AQ; ++q)
        for (uint kk = 0; kk < 4; ++kk)
          at[q][4 * v + kk] = fetch_a4((base_a + (k0 + 4 * v + kk) * p.lda + arun[q]) / 4);
    } else {
      for (uint r = 0; r < AROWS; ++r) ar[r][v] = load_a4(base_a, arow[r], k0 + 4 * v);
    }
    if (B_RUNS != 0) {
      // Four rows of B, each a 4-vector of this lane's run of columns (n % 4 == 0, so a run is
      // wholly in range or wholly clamped).
      for (uint g = 0; g < TN / 4; ++g)
        for (uint kk = 0; kk < 4; ++kk) {
          const vec4 r = fetch_b4((base_b + (k0 + 4 * v + kk) * p.ldb + cols[4 * g]) / 4);
          for (uint e = 0; e < 4; ++e) bv[4 * g + e][v][kk] = r[e];
        }
    } else {
      for (uint j = 0; j < TN; ++j) bv[j][v] = load_b4(base_b, k0 + 4 * v, cols[j]);
    }
  }
  for (uint i = 0; i < TM; ++i) {
    vec4 av[KV];
    for (uint v = 0; v < nv; ++v)
      for (uint kk = 0; kk < 4; ++kk)
        av[v][kk] = A_RUNS != 0 ? subgroupShuffle(at[i / (4 * S)][4 * v + kk][i % 4], (i / 4) % S)
                                : subgroupShuffle(ar[i / S][v][kk], i % S);
    for (uint j = 0; j < TN; ++j) {
      float t = acc[i][j];
      for (uint v = 0; v < nv; ++v)
        for (uint kk = 0; kk < 4; ++kk) t = fma(av[v][kk], bv[j][v][kk], t);
      acc[i][j] = t;
    }
  }
}

#endif

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint tn = lid % CSTEP, tm = lid / CSTEP;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint z = gl_WorkGroupID.z;
  const uint base_a = z * p.stride_a, base_b = z * p.stride_b, base_c = z * p.stride_c;

  for (uint i = 0; i < TM; ++i)
    for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  if (SHARED == 0) {
#ifndef VKF_NO_SHUFFLE
    const uint lane = gl_SubgroupInvocationID;
    for (uint r = 0; r < AROWS; ++r) arow[r] = min(m0 + r * S + lane, p.m - 1);
    // m % 4 == 0 with A_RUNS: a run is wholly in range or wholly clamped to the last one.
    for (uint q = 0; q < AQ; ++q) arun[q] = min(m0 + 4 * lane + 4 * S * q, max(p.m, 4) - 4);
    for (uint j = 0; j < TN; ++j)
      cols[j] = B_RUNS != 0 ? min(n0 + tile_col(lane, j), p.n - 4 + (j & 3))
                       : min(n0 + tile_col(lane, j), p.n - 1);
    uint k0 = 0;
    for (; k0 + 4 * KV <= p.k; k0 += 4 * KV) direct_chunk(base_a, base_b, k0, KV);
    for (; k0 + 4 <= p.k; k0 += 4) direct_chunk(base_a, base_b, k0, 1);
    for (; k0 < p.k; ++k0) {
      float ar[AROWS], bv[TN];
      for (uint r = 0; r < AROWS; ++r) ar[r] = load_a(base_a, arow[r], k0);
      for (uint j = 0; j < TN; ++j) bv[j] = load_b(base_b, k0, cols[j]);
      for (uint i = 0; i < TM; ++i) {
        const float av = subgroupShuffle(ar[i / S], i % S);
        for (uint j = 0; j < TN; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
      }
    }
#endif
  } else {
    for (uint k0 = 0; k0 < p.k; k0 += BK) {
      // Stage A's tile as [BK][BM] and B's as [BK][BN]; the load order follows memory order
      // (k fastest when the operand is k-contiguous) so global reads stay coalesced.
      for (uint idx = lid; idx < BM * BK; idx += gl_WorkGroupSize.x) {
        uint r = TRANS_A != 0 ? idx % BM : idx / BK;
        uint kk = TRANS_A != 0 ? idx / BM : idx % BK;
        bool ok = m0 + r < p.m && k0 + kk < p.k;
        as[kk * BM + r] = ok ? load_a(base_a, m0 + r, k0 + kk) : 0.0;
      }
      for (uint idx = lid; idx < BN * BK; idx += gl_WorkGroupSize.x) {
        uint col = TRANS_B != 0 ? idx / BK : idx % BN;
        uint kk = TRANS_B != 0 ? idx % BK : idx / BN;
        bool ok = n0 + col < p.n && k0 + kk < p.k;
        bs[kk * BN + col] = ok ? load_b(base_b, k0 + kk, n0 + col) : 0.0;
      }
      barrier();
      for (uint kk = 0; kk < BK; ++kk) {
        float av[TM], bv[TN];
        for (uint i = 0; i < TM; ++i) av[i] = as[kk * BM + tm + i * RSTEP];
        for (uint j = 0; j < TN; ++j) bv[j] = bs[kk * BN + tn + j * CSTEP];
        for (uint i = 0; i < TM; ++i)
          for (uint j = 0; j < TN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
      barrier();
    }
  }

  // Epilogue. Every buffer access here is a per-lane loop on CPU devices and the loops are
  // unrolled TM x TN times, so bias is read once per column and C only when READ_C.
  float bias[TN];
  for (uint j = 0; j < TN; ++j)
    bias[j] = (EPILOGUE == 1 || EPILOGUE == 2) ? float(x[min(n0 + tile_col(tn, j), p.n - 1)]) : 0.0;
  for (uint i = 0; i < TM; ++i) {
    const uint row = m0 + tm + i * RSTEP;
    if (row >= p.m) break;
    for (uint j = 0; j < TN; ++j) {
      const uint col = n0 + tile_col(tn, j);  // increasing in j
      if (col >= p.n) break;
      const uint ci = base_c + row * p.ldc + col;
      float v = p.alpha * acc[i][j];
      // READ_C is set only for beta != 0: with beta == 0, C may hold garbage (NaN * 0 is NaN).
      if (READ_C != 0) v += p.beta * float(c[ci]);
      if (EPILOGUE == 1 || EPILOGUE == 2) v += bias[j];
      if (EPILOGUE == 2) v = max(v, 0.0);
      if (EPILOGUE == 3) v += float(x[ci]);
      if (C_F32 != 0)
        c32[ci] = v;
      else
        c[ci] = STORE_T(v);
    }
  }
}
