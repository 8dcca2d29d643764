// Matrix fragments for shaders/matmul_coopmat_khr.comp, in one of two implementations:
//   VKF_COOPMAT_KHR       VK_KHR_cooperative_matrix: tensor cores on NVIDIA (Turing and later),
//                         AMD (RDNA3 and later) and Intel (Arc); the fragment shape FRAG_M x
//                         FRAG_N x FRAG_K is one the device lists, chosen by the engine
//                         (specialization constants 12-14);
//   VKF_COOPMAT_EMULATED  the same operations in plain fp32 arithmetic on 16x16x16 fragments,
//                         each "subgroup" being 32 consecutive invocations. It runs on any device
//                         with fp16 shared memory (Debian 12's lavapipe, whose Mesa 22.3 has no
//                         cooperative matrices), so staging, prefetch, edges, transposes, the
//                         scratch and the epilogue are checked where the extension is absent.
// The emulation implements what SPV_KHR_cooperative_matrix defines: a row-major load takes
// element (i, j) from element (off + i * ld) of the array plus j components, a column-major one
// (i, j) from (off + j * ld) plus i, where the array's elements may be vectors: both tiles and
// the scratch live in `smem`, an array of uvec4 (8 halves or 4 floats an element), so the offsets
// and strides below are in uvec4s.
//
// The including shader declares `smem`. Interface (macros: GLSL cannot pass shared arrays):
//   FRAG_M, FRAG_N, FRAG_K            the fragment shape (uint constants)
//   FRAG_ACC, FRAG_A, FRAG_B          fp32 accumulator, fp16 operand fragment types
//   FRAG_ZERO(acc)                    acc = 0
//   FRAG_LOAD_ROW(f, off, ld)         f = row-major block of halves at smem[off], row stride ld
//   FRAG_LOAD_COL(f, off, ld)         the same, column-major
//   FRAG_MUL_ADD(acc, fa, fb)         acc += fa * fb (fp16 products, fp32 sums)
//   FRAG_STORE(acc, off, ld)          row-major floats to smem[off], row stride ld (4 floats each)
//   SG_ID, SG_LANE, SG_SIZE           the (virtual, when emulated) subgroup and lane
//   SG_BARRIER()                      orders shared-memory accesses within one subgroup

#if defined(VKF_COOPMAT_KHR)

#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

layout(constant_id = 12) const uint FRAG_M = 16;
layout(constant_id = 13) const uint FRAG_N = 16;
layout(constant_id = 14) const uint FRAG_K = 16;
#define FRAG_ACC coopmat<float, gl_ScopeSubgroup, FRAG_M, FRAG_N, gl_MatrixUseAccumulator>
#define FRAG_A coopmat<float16_t, gl_ScopeSubgroup, FRAG_M, FRAG_K, gl_MatrixUseA>
#define FRAG_B coopmat<float16_t, gl_ScopeSubgroup, FRAG_K, FRAG_N, gl_MatrixUseB>
#define FRAG_ZERO(acc) acc = FRAG_ACC(0.0)
#define FRAG_LOAD_ROW(f, off, ld) \
  coopMatLoad(f, smem, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define FRAG_LOAD_COL(f, off, ld) \
  coopMatLoad(f, smem, off, ld, gl_CooperativeMatrixLayoutColumnMajor)
#define FRAG_MUL_ADD(acc, fa, fb) acc = coopMatMulAdd(fa, fb, acc)
#define FRAG_STORE(acc, off, ld) \
  coopMatStore(acc, smem, off, ld, gl_CooperativeMatrixLayoutRowMajor)
#define SG_ID gl_SubgroupID
#define SG_LANE gl_SubgroupInvocationID
#define SG_SIZE gl_SubgroupSize
// subgroupBarrier also makes the subgroup's shared-memory writes visible to its other lanes.
#define SG_BARRIER() subgroupBarrier()

#elif defined(VKF_COOPMAT_EMULATED)

const uint FRAG_M = 16, FRAG_N = 16, FRAG_K = 16;
const uint EMU_SUBGROUP = 32;                               // NVIDIA's subgroup width
const uint EMU_ELEMENTS = FRAG_M * FRAG_N / EMU_SUBGROUP;  // accumulator elements a lane holds

// An operand fragment is where its block lies in smem: the product reads it there.
struct FragOperand {
  uint off, ld;  // in uvec4s (8 halves)
  bool col;
};
// Lane l holds elements l, l + 32, ... of the row-major block.
struct FragAcc {
  float v[EMU_ELEMENTS];
};

// Half number h of smem (8 to a uvec4), and element (i, j) of an operand fragment. Macros, as
// smem is declared after this file (its size depends on the fragment shape).
#define EMU_HALF(h) float(unpackFloat2x16(smem[(h) / 8][((h) % 8) / 2])[(h) % 2])
#define EMU_AT(f, i, j) \
  ((f).col ? EMU_HALF((f).off * 8 + (j) * (f).ld * 8 + (i)) : EMU_HALF((f).off * 8 + (i) * (f).ld * 8 + (j)))

#define FRAG_ACC FragAcc
#define FRAG_A FragOperand
#define FRAG_B FragOperand
#define FRAG_ZERO(acc) \
  for (uint t_ = 0; t_ < EMU_ELEMENTS; ++t_) acc.v[t_] = 0.0
#define FRAG_LOAD_ROW(f, o, l) f = FragOperand(o, l, false)
#define FRAG_LOAD_COL(f, o, l) f = FragOperand(o, l, true)
#define FRAG_MUL_ADD(acc, fa, fb)                                                          \
  for (uint t_ = 0; t_ < EMU_ELEMENTS; ++t_) {                                             \
    const uint e_ = SG_LANE + t_ * EMU_SUBGROUP, i_ = e_ / FRAG_N, j_ = e_ % FRAG_N;       \
    float s_ = acc.v[t_];                                                                  \
    for (uint q_ = 0; q_ < FRAG_K; ++q_) s_ += EMU_AT(fa, i_, q_) * EMU_AT(fb, q_, j_); \
    acc.v[t_] = s_;                                                                        \
  }
#define FRAG_STORE(acc, off, ld)                                                     \
  for (uint t_ = 0; t_ < EMU_ELEMENTS; ++t_) {                                       \
    const uint e_ = SG_LANE + t_ * EMU_SUBGROUP;                                     \
    const uint f_ = (off) * 4 + (e_ / FRAG_N) * (ld) * 4 + e_ % FRAG_N;              \
    smem[f_ / 4][f_ % 4] = floatBitsToUint(acc.v[t_]);                               \
  }
#define SG_ID (gl_LocalInvocationID.x / EMU_SUBGROUP)
#define SG_LANE (gl_LocalInvocationID.x % EMU_SUBGROUP)
#define SG_SIZE EMU_SUBGROUP
// Virtual subgroups are not real ones: only a workgroup barrier orders them. Every call site is
// in workgroup-uniform control flow (loops bounded by specialization constants).
#define SG_BARRIER() barrier()

#else
#error "define VKF_COOPMAT_KHR or VKF_COOPMAT_EMULATED"
#endif
