#version 450
// Tensor-core matmul on VK_NV_cooperative_matrix2, f16 storage: the contract of matmul_f16 and
// matmul_coopmat_khr (C = alpha * op(A) * op(B) + beta * C, both transposes, batched over z with
// strides, epilogues 1 = + bias[n], 2 = relu(. + bias[n]), 3 = + R[m, n]), the same bindings,
// push constants and specialization-constant ids 0-3 and 7-11, so engine/ops/matmul.cpp builds
// it from the same spec. fp16 products, fp32 accumulation and epilogue, C stored as fp16 (or fp32: C_F32).
//
// Unlike the KHR kernel, this one stages nothing itself: the whole workgroup owns one
// BM x BN accumulator (workgroup scope), and each k-step loads op(A)'s BM x BK and op(B)'s
// BK x BN blocks straight from the buffers through tensor layouts. The driver chooses how the
// blocks travel (on NVIDIA: asynchronous copies into shared memory it reserves, pipelined
// across steps) and how the product is split among subgroups and tensor-core instructions: the
// parts the KHR kernel writes by hand, with its barriers, are the compiler's here. This is how
// ggml's coopmat2 matmul (mul_mm_cm2.comp) reaches within 5-15% of CUDA on NVIDIA cards.
//
// Edges: where a block lies wholly inside A and B (every whole k block of a tile wholly inside
// C), the loads are unclamped; elsewhere they go through layouts in the constant clamp mode,
// whose elements outside [m, k] and [k, n] read as zero and add nothing.
// The store is always clamped: elements outside [m, n] are not written.
//
// Needs cooperativeMatrixWorkgroupScope, FlexibleDimensions, TensorAddressing and
// PerElementOperations, and a flexible-dimensions entry with fp16 A, B and fp32 C at workgroup
// scope whose granularities divide the tiles, for this workgroup size (engine/device_info.cpp).
// Mesa 26.1's lavapipe lists the extension without workgroup scope or tensor addressing, so this
// kernel runs on GPUs only; built only where glslc knows GL_NV_cooperative_matrix2.
// vkf-variant-only
// vkf-variant: matmul_coopmat_nv2 VKF_COOPMAT_NV2=1
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 64;
// constant_id 4-6 (the other paths' per-thread block and SHARED) are unused: the driver splits
// the workgroup's tile among its subgroups.
layout(constant_id = 7) const uint TRANS_A = 0;
layout(constant_id = 8) const uint TRANS_B = 0;
layout(constant_id = 9) const uint EPILOGUE = 0;
// Bits 0-2: A's, B's and C's row and batch strides and binding offsets keep every run of 8
// halves 16-byte aligned (engine/ops/matmul.cpp runs_of_8). Those strides then have their low
// bits masked off, as ggml's coopmat2 kernel does to hint the compiler: the driver picks its
// access width from what it can prove of the strides.
layout(constant_id = 10) const uint VEC = 0;
layout(constant_id = 11) const uint READ_C = 0;  // beta != 0
// constant_id 12-17 belong to the KHR kernel. 18: C is stored as fp32 through the C32 view of
// its binding: a split-k slice's partial product (engine/ops/matmul.cpp), with alpha 1, beta 0
// and no epilogue.
layout(constant_id = 18) const uint C_F32 = 0;

layout(std430, binding = 0) restrict readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) restrict readonly buffer B { float16_t b[]; };
layout(std430, binding = 2) buffer C { float16_t c[]; };
layout(std430, binding = 2) buffer C32 { float c32[]; };
// bias [N] for epilogues 1 and 2, R for epilogue 3, unused (any buffer) otherwise.
layout(std430, binding = 3) restrict readonly buffer X { float16_t x[]; };

layout(push_constant) uniform Push {
  uint m, n, k;
  uint lda, ldb, ldc;
  uint stride_a, stride_b, stride_c;
  float alpha, beta;
} p;

#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define OUT coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define MAT_A coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define MAT_B coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>
const uint CLAMP = gl_CooperativeMatrixClampModeConstantNV;

// alpha * acc (+ beta * C) (+ bias | relu(. + bias) | + R) for the element (row, col) of the
// tile at (m0, n0) of batch item base_c, where there is an epilogue or C is read. Elements
// outside C compute nothing: the clamped store drops them.
float epilogue(const in uint row, const in uint col, const in float acc, const in uint m0,
               const in uint n0, const in uint base_c) {
  const uint r = m0 + row, cl = n0 + col;
  if (r >= p.m || cl >= p.n) return 0.0;
  const uint at = base_c + r * p.ldc + cl;
  float v = p.alpha * acc;
  // READ_C is set only for beta != 0: with beta == 0, C may hold garbage (NaN * 0 is NaN).
  if (READ_C != 0) v += p.beta * float(c[at]);
  if (EPILOGUE == 1 || EPILOGUE == 2) v += float(x[cl]);
  if (EPILOGUE == 2) v = max(v, 0.0);
  if (EPILOGUE == 3) v += float(x[at]);
  return v;
}

// Stored A is [m, k] row stride lda, or [k, m] when TRANS_A; stored B [k, n] row stride ldb, or
// [n, k] when TRANS_B. A layout's dimensions are the stored matrix's, outer first; a transposed
// operand's block is sliced in stored order and loaded through the transposing view.
#define SET_LAYOUTS(la, lb)                                                                 \
  la = TRANS_A != 0 ? setTensorLayoutDimensionNV(la, p.k, p.m)                              \
                    : setTensorLayoutDimensionNV(la, p.m, p.k);                             \
  la = setTensorLayoutStrideNV(la, lda, 1);                                                 \
  lb = TRANS_B != 0 ? setTensorLayoutDimensionNV(lb, p.n, p.k)                              \
                    : setTensorLayoutDimensionNV(lb, p.k, p.n);                             \
  lb = setTensorLayoutStrideNV(lb, ldb, 1);

// acc += op(A)[m0.., k0..k0 + BK] * op(B)[k0..k0 + BK, n0..] through layouts la, lb.
#define K_STEP(acc, la, lb, k0)                                                             \
  {                                                                                         \
    MAT_A fa;                                                                               \
    MAT_B fb;                                                                               \
    if (TRANS_A != 0)                                                                       \
      coopMatLoadTensorNV(fa, a, base_a, sliceTensorLayoutNV(la, k0, BK, m0, BM), transpose); \
    else                                                                                    \
      coopMatLoadTensorNV(fa, a, base_a, sliceTensorLayoutNV(la, m0, BM, k0, BK));          \
    if (TRANS_B != 0)                                                                       \
      coopMatLoadTensorNV(fb, b, base_b, sliceTensorLayoutNV(lb, n0, BN, k0, BK), transpose); \
    else                                                                                    \
      coopMatLoadTensorNV(fb, b, base_b, sliceTensorLayoutNV(lb, k0, BK, n0, BN));          \
    acc = coopMatMulAdd(fa, fb, acc);                                                       \
  }

// Steps a k run of 256 holds: the unclamped path's loop is unrolled by that many, as ggml's
// kernel does (each workgroup-scope load waits on the driver's staging; unrolled, the driver
// can issue a later step's loads before an earlier step's product).
const uint UNROLL = BK >= 256 ? 1 : 256 / BK;

void main() {
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint z = gl_WorkGroupID.z;
  const uint runs_a = (VEC & 1) != 0 ? ~7u : ~0u, runs_b = (VEC & 2) != 0 ? ~7u : ~0u,
             runs_c = (VEC & 4) != 0 ? ~7u : ~0u;
  const uint lda = p.lda & runs_a, ldb = p.ldb & runs_b, ldc = p.ldc & runs_c;
  const uint base_a = z * (p.stride_a & runs_a), base_b = z * (p.stride_b & runs_b),
             base_c = z * (p.stride_c & runs_c);
  tensorViewNV<2, false, 1, 0> transpose = createTensorViewNV(2, false, 1, 0);

  ACC acc = ACC(0.0);
  // A tile wholly inside C takes its whole k blocks unclamped, and only the last, partial one
  // (k not a multiple of BK) clamped; a tile on C's edge takes every block clamped. Uniform
  // across the workgroup, as workgroup-scope operations require.
  const bool whole_tile = m0 + BM <= p.m && n0 + BN <= p.n;
  const uint k_unclamped = whole_tile ? p.k - p.k % BK : 0;
  if (k_unclamped > 0) {
    tensorLayoutNV<2> la = createTensorLayoutNV(2);
    tensorLayoutNV<2> lb = createTensorLayoutNV(2);
    SET_LAYOUTS(la, lb)
    uint k0 = 0;
    for (; k0 + UNROLL * BK <= k_unclamped;) {
      [[unroll]] for (uint j = 0; j < UNROLL; ++j) {
        K_STEP(acc, la, lb, k0)
        k0 += BK;
      }
    }
    for (; k0 < k_unclamped; k0 += BK) K_STEP(acc, la, lb, k0)
  }
  if (k_unclamped < p.k) {
    tensorLayoutNV<2, CLAMP> la = createTensorLayoutNV(2, CLAMP);
    tensorLayoutNV<2, CLAMP> lb = createTensorLayoutNV(2, CLAMP);
    SET_LAYOUTS(la, lb)
    for (uint k0 = k_unclamped; k0 < p.k; k0 += BK) K_STEP(acc, la, lb, k0)
  }

  // The per-element epilogue only where there is one: with no epilogue and no C to read (a
  // split's slices, the bench's rows, every gradient matmul with beta 0), alpha is a scaling of
  // the whole tile and the clamped store alone drops the elements outside C, so the driver need
  // not work out each element's row and column (ggml's coopmat2 kernel has no per-element step).
  if (EPILOGUE != 0 || READ_C != 0)
    coopMatPerElementNV(acc, acc, epilogue, m0, n0, base_c);
  else if (p.alpha != 1.0)
    acc = acc * p.alpha;
  // Which invocation stores an element is the driver's choice: C's reads above end, workgroup-
  // wide, before any of its stores.
  if (READ_C != 0) {
    memoryBarrierBuffer();
    barrier();
  }
  tensorLayoutNV<2, CLAMP> lc = createTensorLayoutNV(2, CLAMP);
  lc = setTensorLayoutDimensionNV(lc, p.m, p.n);
  lc = setTensorLayoutStrideNV(lc, ldc, 1);
  if (C_F32 != 0) {
    coopMatStoreTensorNV(acc, c32, base_c, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
  } else {
    OUT out_tile = OUT(acc);
    coopMatStoreTensorNV(out_tile, c, base_c, sliceTensorLayoutNV(lc, m0, BM, n0, BN));
  }
}
