#version 450
// The tensor-core rate probe: what VK_KHR_cooperative_matrix's multiply-add reaches on this
// device and driver with nothing else in the way (no loads, no shared memory, no barriers), the
// ceiling any coopmat matmul (shaders/matmul_coopmat_khr.comp) can approach. Each subgroup keeps
// CHAINS independent fp32 accumulators of one listed fragment shape M x N x K and runs
// `iterations` products of two constant fp16 fragments into each (enough chains to cover the
// product's latency), then stores the accumulators' sum: element (i, j) of subgroup s at
// out[s * M * N + i * N + j]. With a and b powers of two every partial sum is exact in fp32:
// each element ends at sum over c of (c + iterations * K * a * b).
// OPERANDS says where the fragments come from, to tell the products' rate from the rate of
// feeding them: 0, constants built once (the products alone); 1 and 2, coopMatLoad from shared
// memory every iteration (one of four copies in turn, so no load can be hoisted), from an array
// of uvec4 (8 halves an element, as the matmul stages its tiles) or of float16_t.
// vkf-variant-only
// vkf-variant: peak_coopmat_khr VKF_COOPMAT_KHR=1
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CHAINS = 4;
layout(constant_id = 2) const uint FRAG_M = 16;
layout(constant_id = 3) const uint FRAG_N = 16;
layout(constant_id = 4) const uint FRAG_K = 16;
layout(constant_id = 5) const uint OPERANDS = 0;
layout(std430, binding = 0) writeonly buffer Out { float out_[]; };
layout(push_constant) uniform Push {
  uint iterations;
  float a, b;
} p;

#define FRAG_A coopmat<float16_t, gl_ScopeSubgroup, FRAG_M, FRAG_K, gl_MatrixUseA>
#define FRAG_B coopmat<float16_t, gl_ScopeSubgroup, FRAG_K, FRAG_N, gl_MatrixUseB>
#define FRAG_ACC coopmat<float, gl_ScopeSubgroup, FRAG_M, FRAG_N, gl_MatrixUseAccumulator>

// Four copies of A's fragment, then four of B's, row-major (the wrapper asks for dimensions that
// are multiples of 8 in the shared modes): in uvec4s, or in halves.
const uint A_HALVES = FRAG_M * FRAG_K, B_HALVES = FRAG_K * FRAG_N;
const uint HALVES = OPERANDS == 0 ? 8 : 4 * (A_HALVES + B_HALVES);
shared uvec4 tiles8[OPERANDS == 1 ? HALVES / 8 : 1];
shared float16_t tiles[OPERANDS == 2 ? HALVES : 1];

void main() {
  FRAG_A fa = FRAG_A(float16_t(p.a));
  FRAG_B fb = FRAG_B(float16_t(p.b));
  if (OPERANDS != 0) {
    const uint ab = packFloat2x16(f16vec2(float16_t(p.a))), bb = packFloat2x16(f16vec2(float16_t(p.b)));
    for (uint h = gl_LocalInvocationID.x * 8; h < HALVES; h += gl_WorkGroupSize.x * 8) {
      const uint w = h < 4 * A_HALVES ? ab : bb;
      if (OPERANDS == 1) {
        tiles8[h / 8] = uvec4(w);
      } else {
        for (uint e = 0; e < 8; ++e) tiles[h + e] = h < 4 * A_HALVES ? float16_t(p.a) : float16_t(p.b);
      }
    }
    barrier();
  }
  FRAG_ACC acc[CHAINS];
  for (uint c = 0; c < CHAINS; ++c) acc[c] = FRAG_ACC(float(c));
  for (uint i = 0; i < p.iterations; ++i) {
    const uint copy = i % 4;
    if (OPERANDS == 1) {
      coopMatLoad(fa, tiles8, copy * A_HALVES / 8, FRAG_K / 8, gl_CooperativeMatrixLayoutRowMajor);
      coopMatLoad(fb, tiles8, (4 * A_HALVES + copy * B_HALVES) / 8, FRAG_N / 8,
                  gl_CooperativeMatrixLayoutRowMajor);
    } else if (OPERANDS == 2) {
      coopMatLoad(fa, tiles, copy * A_HALVES, FRAG_K, gl_CooperativeMatrixLayoutRowMajor);
      coopMatLoad(fb, tiles, 4 * A_HALVES + copy * B_HALVES, FRAG_N,
                  gl_CooperativeMatrixLayoutRowMajor);
    }
    for (uint c = 0; c < CHAINS; ++c) acc[c] = coopMatMulAdd(fa, fb, acc[c]);
  }
  for (uint c = 1; c < CHAINS; ++c) acc[0] = acc[0] + acc[c];
  const uint subgroup = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  coopMatStore(acc[0], out_, subgroup * FRAG_M * FRAG_N, FRAG_N,
               gl_CooperativeMatrixLayoutRowMajor);
}
