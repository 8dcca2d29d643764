// 16x16 matrix fragments for shaders/matmul_coopmat.comp, in one of two implementations:
//   VKF_COOPMAT_NV        VK_NV_cooperative_matrix (tensor cores on NVIDIA Volta and later);
//   VKF_COOPMAT_EMULATED  the same operations in plain fp32 arithmetic, each "subgroup" being 32
//                         consecutive invocations of the workgroup. It runs on any device with
//                         fp16 shared memory (lavapipe included), so the tests check everything
//                         around the fragments - staging, zero fill at the edges, transposes,
//                         the accumulator scratch and the epilogue - where tensor cores are absent.
// Only the meaning of the three fragment operations is taken on trust from the extension; the
// emulation implements that meaning as SPV_NV_cooperative_matrix defines it: a row-major load
// takes element (i, j) from buf[off + i * ld + j], a column-major one from buf[off + j * ld + i].
//
// The macros name what the including shader declares: F (= 16), the fp16 shared tiles `as` and
// `bs` that A and B fragments are loaded from, and the fp32 scratch `cs` accumulators go to.
// Interface (macros: GLSL has no generics and cannot pass shared arrays to functions):
//   FRAG_ACC, FRAG_A, FRAG_B          fp32 accumulator, fp16 operand fragment types
//   FRAG_ZERO(acc)                    acc = 0
//   FRAG_LOAD_A(fa, off, ld, col)     fa = 16x16 block of `as` at off (row stride ld)
//   FRAG_LOAD_B(fb, off, ld, col)     fb = 16x16 block of `bs`
//   FRAG_MUL_ADD(acc, fa, fb)         acc += fa * fb (fp16 products, fp32 sums)
//   FRAG_STORE(acc, off)              cs[off + i * 16 + j] = acc[i][j]
//   SG_ID, SG_LANE, SG_SIZE           the (virtual, when emulated) subgroup and lane
//   SG_BARRIER()                      orders shared-memory accesses within one subgroup

#if defined(VKF_COOPMAT_NV)

#extension GL_KHR_memory_scope_semantics : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_shader_subgroup_basic : require

#define FRAG_ACC fcoopmatNV<32, gl_ScopeSubgroup, F, F>
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, F, F>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, F, F>
#define FRAG_ZERO(acc) acc = FRAG_ACC(0.0)
#define FRAG_LOAD_A(fa, off, ld, col) coopMatLoadNV(fa, as, off, ld, col)
#define FRAG_LOAD_B(fb, off, ld, col) coopMatLoadNV(fb, bs, off, ld, col)
#define FRAG_MUL_ADD(acc, fa, fb) acc = coopMatMulAddNV(fa, fb, acc)
#define FRAG_STORE(acc, off) coopMatStoreNV(acc, cs, off, F, false)
#define SG_ID gl_SubgroupID
#define SG_LANE gl_SubgroupInvocationID
#define SG_SIZE gl_SubgroupSize
// subgroupBarrier also makes the subgroup's shared-memory writes visible to its other lanes.
#define SG_BARRIER() subgroupBarrier()

#elif defined(VKF_COOPMAT_EMULATED)

const uint EMU_SUBGROUP = 32;                       // NVIDIA's subgroup width
const uint EMU_ELEMENTS = 16 * 16 / EMU_SUBGROUP;  // accumulator elements a lane holds

// An operand fragment is where its block lies in the shared tile: the product reads it there.
struct FragOperand {
  uint off, ld;
  bool col;
};
// Lane l holds elements l, l + 32, ... of the row-major 16x16 block.
struct FragAcc {
  float v[EMU_ELEMENTS];
};

#define FRAG_ACC FragAcc
#define FRAG_A FragOperand
#define FRAG_B FragOperand
#define FRAG_ZERO(acc) \
  for (uint t_ = 0; t_ < EMU_ELEMENTS; ++t_) acc.v[t_] = 0.0
#define FRAG_LOAD_A(fa, o, l, c) fa = FragOperand(o, l, c)
#define FRAG_LOAD_B(fb, o, l, c) fb = FragOperand(o, l, c)
#define FRAG_MUL_ADD(acc, fa, fb)                                                      \
  for (uint t_ = 0; t_ < EMU_ELEMENTS; ++t_) {                                         \
    const uint e_ = SG_LANE + t_ * EMU_SUBGROUP, i_ = e_ / 16, j_ = e_ % 16;           \
    float s_ = acc.v[t_];                                                              \
    for (uint q_ = 0; q_ < 16; ++q_) {                                                 \
      const float x_ = float(as[fa.col ? fa.off + q_ * fa.ld + i_ : fa.off + i_ * fa.ld + q_]); \
      const float y_ = float(bs[fb.col ? fb.off + j_ * fb.ld + q_ : fb.off + q_ * fb.ld + j_]); \
      s_ += x_ * y_;                                                                   \
    }                                                                                  \
    acc.v[t_] = s_;                                                                    \
  }
#define FRAG_STORE(acc, off) \
  for (uint t_ = 0; t_ < EMU_ELEMENTS; ++t_) cs[(off) + SG_LANE + t_ * EMU_SUBGROUP] = acc.v[t_]
#define SG_ID (gl_LocalInvocationID.x / EMU_SUBGROUP)
#define SG_LANE (gl_LocalInvocationID.x % EMU_SUBGROUP)
#define SG_SIZE EMU_SUBGROUP
// Virtual subgroups are not real ones: only a workgroup barrier orders them. Every call site is
// in workgroup-uniform control flow (loops bounded by specialization constants).
#define SG_BARRIER() barrier()

#else
#error "define VKF_COOPMAT_NV or VKF_COOPMAT_EMULATED"
#endif
