#pragma once
// Batched, strided GEMM with fused epilogues:
//   C = alpha * op(A) * op(B) + beta * C, then + bias[n] | relu(. + bias[n]) | + R[m, n].
// The kernel is shaders/matmul.comp; shaders/matmul_coopmat_khr.comp (tensor cores through
// VK_KHR_cooperative_matrix) for f16 storage where the device lists a fitting shape; or
// shaders/matmul_coopmat.comp (NVIDIA tensor cores through VK_NV_cooperative_matrix) for a forced
// or tuned nvidia_coopmat row, or shaders/matmul_coopmat_nv2.comp (VK_NV_cooperative_matrix2)
// for a forced or tuned nv_coopmat2 row; tiles come from the tuning table (matmul_tuning.h).
#include <cstdint>
#include <optional>

#include "engine/device.h"
#include "engine/ops/matmul_choice.h"
#include "engine/ops/matmul_tuning.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

enum class Epilogue : uint32_t { none = 0, bias = 1, bias_relu = 2, residual = 3 };

struct MatmulArgs {
  // All element counts, strides and leading dimensions are in elements of `dtype`.
  BufferRef a;         // op(A): [batch][m, k]; stored [m, k] row stride lda, or [k, m] when trans_a
  BufferRef b;         // op(B): [batch][k, n]; stored [k, n] row stride ldb, or [n, k] when trans_b
  BufferRef c;         // C: [batch][m, n], row stride ldc; read only when beta != 0
  BufferRef bias;      // [n]; for Epilogue::bias and bias_relu (not batched)
  BufferRef residual;  // R: [batch][m, n] with C's layout (ldc, stride_c); Epilogue::residual
  uint32_t m = 0, n = 0, k = 0;
  uint32_t batch = 1;
  bool trans_a = false;
  bool trans_b = false;  // true for PyTorch Linear weights W[n, k]: y = x W^T
  // Row strides; nullopt = packed (k or m for A, n or k for B, n for C).
  std::optional<uint32_t> lda, ldb, ldc;
  // Elements between batch items; nullopt = packed; 0 broadcasts one operand over the batch.
  std::optional<uint32_t> stride_a, stride_b, stride_c;
  float alpha = 1.0f;
  float beta = 0.0f;
  Epilogue epilogue = Epilogue::none;
  DType dtype = DType::f32;  // f32, or f16 storage (fp32 arithmetic) on devices with storage16
  // Forces a configuration (tests, benches, the tuner); nullptr = choose_matmul(device, problem):
  // the device's tuning, else the table's row (matmul_choice.h).
  const MatmulConfig* config = nullptr;
  // For a coopmat row only (tests): run its kernel with the 16x16 fragment products in plain
  // fp32 arithmetic (shaders/common/coopmat_fragment.glsl, coopmat_khr_fragment.glsl) instead
  // of tensor cores, so that its staging, edges and epilogue are checked on devices without the
  // cooperative-matrix extension. Slow.
  bool emulate_coopmat = false;
  // For a KHR row only (benchmarks): drop parts of the kernel's k-loop to time the rest, the
  // results then wrong (shaders/matmul_coopmat_khr.comp, DIAG): bit 0 the global reads, bit 1
  // the barriers and staging, bit 2 the fragment loads too (the first fragments are multiplied
  // every time). 0 = the kernel as it is.
  uint32_t khr_diagnostic = 0;
  // Read A and B through uniform texel buffers (shaders/matmul.comp, VKF_TEXEL) rather than
  // storage buffers. The views need A's and B's offsets aligned to
  // DeviceInfo::texel_buffer_alignment and their elements in whole 4-element texels.
  // nullopt: on CPU devices, where lavapipe gathers texels without the per-lane loop of its
  // storage-buffer loads, wherever the views fit (else storage buffers);
  // DeviceOptions::ops.matmul_texel_views overrides that default (the tools' VKF_MATMUL_TEXEL=0
  // or 1, for benchmarks). true: texel views or an error. false: storage buffers.
  std::optional<bool> texel_views;
  // Split-k. Where C has too few tiles to fill the device and k is long (weight and bias
  // gradients, whose k is the batch's tokens), one workgroup a tile leaves most of the device
  // idle. The k range is then cut into slices that run side by side in one dispatch, each
  // storing its product in fp32 into `workspace`; a second kernel
  // (shaders/matmul_split_reduce.comp) adds them in order and applies alpha, beta and the
  // epilogue. Only with a workspace (matmul_split_k says how much it would use), at batch 1, and
  // not on VK_NV_cooperative_matrix (v1) rows. The workspace must not overlap the operands.
  BufferRef workspace;
  // nullopt: as matmul_split_k chooses, within the workspace; 1: never; n > 1: at most n slices
  // (tests, benches), an error where they cannot run.
  std::optional<uint32_t> split_k;
};

// How split-k cuts a matmul (MatmulArgs::workspace).
struct SplitK {
  uint32_t slices = 1;           // 1: not split
  uint32_t slice_k = 0;          // k per slice; the last one takes what is left
  uint64_t partial_stride = 0;   // elements between slices' partial products (m x n, padded)
  uint64_t workspace_bytes = 0;  // fp32 partial products, slices x partial_stride
};

// Validates the arguments, chooses the kernel (choose_matmul below) and records it.
void matmul(Device& dev, Recorder& rec, const MatmulArgs& args);

// The problem the arguments pose, and the configuration matmul() runs it with, and why.
MatmulProblem matmul_problem(const MatmulArgs& args);
MatmulChoice choose_matmul(const Device& dev, const MatmulArgs& args);
// The split the matmul runs with: within args.workspace, or with `unbounded_workspace` as if the
// workspace had room for any (what a caller sizes its workspace by). Where args.split_k is
// nullopt and DeviceOptions::ops.matmul_split_k is not false: the configuration's split_k where
// it has one (the device's tuning: what the tuner timed), else the rule: where C's tiles
// number at most half the compute units (DeviceInfo::compute_units; 16 where the driver does not
// say), as many slices as give every unit a workgroup, each at least 256 deep in k, at most 16;
// none for less than 16 Mi flops (2 m n k), where the reduce's dispatch costs more.
SplitK matmul_split_k(const Device& dev, const MatmulArgs& args, bool unbounded_workspace = false);
// The same for a device's limits, a configuration and `room` bytes of workspace (the tests ask it
// of devices they do not have). Throws where a forced split cannot run.
SplitK plan_matmul_split_k(const DeviceInfo& info, const MatmulArgs& args,
                           const MatmulConfig& config, uint64_t room);
// Whether the configuration's kernel can store fp32 partial products (every kernel but the
// VK_NV_cooperative_matrix v1 one), so that a matmul with a workspace may split on it.
bool matmul_kernel_splits(const MatmulConfig& config);

// Whether this build has the tensor-core kernel for coopmat rows: it is compiled only where
// glslc knew GL_NV_cooperative_matrix at configure time (VKF_HAVE_NV_COOPMAT).
bool matmul_coopmat_built();
// The same for the KHR rows' kernel: glslc knew GL_KHR_cooperative_matrix (VKF_HAVE_KHR_COOPMAT;
// Debian 12's glslc does not, -DVKF_GLSLC=scripts/glslc-debian13 builds it there).
bool matmul_coopmat_khr_built();

}  // namespace vkf::ops
