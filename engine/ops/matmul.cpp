#include "engine/ops/matmul.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/shader_registry.h"

namespace vkf::ops {
namespace {

struct Push {
  uint32_t m, n, k;
  uint32_t lda, ldb, ldc;
  uint32_t stride_a, stride_b, stride_c;
  float alpha, beta;
};

std::string shape_of(const MatmulArgs& a) {
  return "matmul [" + std::to_string(a.batch) + " x " + std::to_string(a.m) + "x" +
         std::to_string(a.k) + " * " + std::to_string(a.k) + "x" + std::to_string(a.n) + "]";
}

// Elements a batched [batch][rows, cols] operand with row stride ld spans.
uint64_t span_elements(uint32_t batch, uint64_t stride, uint32_t rows, uint32_t cols, uint32_t ld) {
  return (batch - 1) * stride + uint64_t(rows - 1) * ld + cols;
}

void check_operand(const MatmulArgs& args, const char* name, const BufferRef& buf,
                   uint64_t elements, uint32_t esize) {
  if (!buf.valid()) throw Error(shape_of(args) + ": operand " + name + " is not bound");
  if (elements * esize > buf.size)
    throw Error(shape_of(args) + ": operand " + name + " needs " +
                std::to_string(elements * esize) + " bytes but its buffer has " +
                std::to_string(buf.size));
  // The shader indexes with 32-bit integers.
  if (elements > UINT32_MAX)
    throw Error(shape_of(args) + ": operand " + name + " spans " + std::to_string(elements) +
                " elements, more than 32-bit indexing allows");
}

void check_ld(const MatmulArgs& args, const char* name, uint32_t ld, uint32_t min) {
  if (ld < min)
    throw Error(shape_of(args) + ": " + name + " = " + std::to_string(ld) + " is below " +
                std::to_string(min));
}

VkFormat texel_format(DType t) {
  return t == DType::f16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT;
}

// Whether a view of 4-element texels can cover `buf` and its first `elements` elements (the
// view holds whole texels only).
bool texel_view_fits(const BufferRef& buf, uint64_t elements, DType t, const DeviceInfo& info) {
  const VkFormat f = texel_format(t);
  return texel_view_misfit(info, buf, f).empty() &&
         buf.size / texel_bytes(f) * texel_bytes(f) >= elements * dtype_bytes(t);
}

bool texel_views_wanted(const MatmulArgs& args, const MatmulConfig& cfg, const Device& dev) {
  if (args.texel_views) return *args.texel_views;
  if (const auto& forced = dev.options().ops.matmul_texel_views) return *forced;
  if (cfg.texel) return *cfg.texel;  // a tuned configuration's choice
  return dev.info().is_cpu();
}

constexpr const char* k_coopmat_shader = "matmul_coopmat";
constexpr const char* k_coopmat_emulated_shader = "matmul_coopmat_emulated";
constexpr const char* k_coopmat_khr_shader = "matmul_coopmat_khr";
// The same kernel without its [[unroll]] attributes, for CPU devices: lavapipe (Mesa 26.1)
// compiled the unrolled kernel for minutes per pipeline, where GPUs need it unrolled (on an
// H200 the rolled fragment loops ran it at a fifth of its rate).
constexpr const char* k_coopmat_khr_rolled_shader = "matmul_coopmat_khr_rolled";
constexpr const char* k_coopmat_khr_emulated_shader = "matmul_coopmat_khr_emulated";

// Whether every run of 8 halves along a contiguous dimension starts 16-byte aligned.
bool runs_of_8(uint32_t ld, uint32_t stride, const BufferRef& buf) {
  return ld % 8 == 0 && stride % 8 == 0 && buf.offset % 16 == 0;
}

}  // namespace

bool matmul_coopmat_built() {
  return !shaders::find(k_coopmat_shader).empty();
}

bool matmul_coopmat_khr_built() {
  return !shaders::find(k_coopmat_khr_shader).empty();
}

namespace {

// Validation that needs no kernel choice: sizes, storage type, the device's features.
void check_problem(const Device& dev, const MatmulArgs& args) {
  const DeviceInfo& info = dev.info();
  if (args.m == 0 || args.n == 0 || args.k == 0 || args.batch == 0)
    throw Error(shape_of(args) + ": empty dimensions are not supported");
  if (args.dtype != DType::f32 && args.dtype != DType::f16)
    throw Error(shape_of(args) + ": dtype " + dtype_name(args.dtype) + " is not supported");
  if (args.dtype == DType::f16 && !info.storage16)
    throw Error(shape_of(args) + ": f16 storage needs storageBuffer16BitAccess, which " +
                dev.label() + " lacks");
}

// Whether the chosen configuration can run these arguments on this device and build.
void check_config(const Device& dev, const MatmulArgs& args, const MatmulConfig& cfg) {
  const DeviceInfo& info = dev.info();
  if (cfg.coopmat && args.dtype != DType::f16)
    throw Error(shape_of(args) + ": configuration '" + cfg.name +
                "' (tensor cores) multiplies f16 storage only, not " + dtype_name(args.dtype));
  if (args.emulate_coopmat && !cfg.coopmat)
    throw Error(shape_of(args) + ": emulate_coopmat applies to coopmat rows, not '" + cfg.name +
                "'");
  if (args.khr_diagnostic != 0 && (!cfg.khr || args.khr_diagnostic > 7))
    throw Error(shape_of(args) + ": khr_diagnostic (bits 0 to 2) applies to KHR rows, not '" +
                cfg.name + "' with " + std::to_string(args.khr_diagnostic));
  if (args.emulate_coopmat && cfg.nv2)
    throw Error(shape_of(args) + ": configuration '" + cfg.name +
                "' (VK_NV_cooperative_matrix2) has no emulated kernel");
  const bool emulated = args.emulate_coopmat;
  if (cfg.nv2 && shaders::find(cfg.coopmat_kernel()).empty())
    throw Error(shape_of(args) + ": configuration '" + cfg.name + "' needs the " +
                cfg.coopmat_kernel() +
                " kernel, which this build lacks (glslc did not support GL_NV_cooperative_matrix2 "
                "when CMake configured it; -DVKF_GLSLC names a newer one)");
  if (cfg.coopmat && !cfg.khr && !cfg.nv2 && !emulated && !matmul_coopmat_built())
    throw Error(shape_of(args) + ": configuration '" + cfg.name + "' needs the " +
                k_coopmat_shader +
                " kernel, which this build lacks (glslc did not support GL_NV_cooperative_matrix "
                "when CMake configured it)");
  if (cfg.khr && !emulated && !matmul_coopmat_khr_built())
    throw Error(shape_of(args) + ": configuration '" + cfg.name + "' needs the " +
                k_coopmat_khr_shader +
                " kernel, which this build lacks (glslc did not support GL_KHR_cooperative_matrix "
                "when CMake configured it; -DVKF_GLSLC names a newer one)");
  if (const std::string why = matmul_config_misfit(cfg, info, emulated); !why.empty())
    throw Error(shape_of(args) + ": configuration '" + cfg.name + "' does not fit " + dev.label() +
                ": " + why);
  if (args.batch > info.max_workgroup_count[2])
    throw Error(shape_of(args) + ": batch " + std::to_string(args.batch) + " exceeds " +
                std::to_string(info.max_workgroup_count[2]) + " workgroups in z");
}

// The operands as the kernel indexes them: strides resolved and checked against the buffers.
struct Operands {
  Push push{};
  uint64_t a_elements = 0, b_elements = 0;  // the spans of A and B over the whole batch
  BufferRef extra;                          // binding 3: bias, residual, or A standing in
};

Operands check_operands(const MatmulArgs& args) {
  Operands o;
  Push& push = o.push;
  const uint32_t esize = dtype_bytes(args.dtype);
  const uint32_t a_rows = args.trans_a ? args.k : args.m, a_cols = args.trans_a ? args.m : args.k;
  const uint32_t b_rows = args.trans_b ? args.n : args.k, b_cols = args.trans_b ? args.k : args.n;
  push.m = args.m;
  push.n = args.n;
  push.k = args.k;
  push.lda = args.lda.value_or(a_cols);
  push.ldb = args.ldb.value_or(b_cols);
  push.ldc = args.ldc.value_or(args.n);
  check_ld(args, "lda", push.lda, a_cols);
  check_ld(args, "ldb", push.ldb, b_cols);
  check_ld(args, "ldc", push.ldc, args.n);
  const uint64_t packed_a = span_elements(1, 0, a_rows, a_cols, push.lda);
  const uint64_t packed_b = span_elements(1, 0, b_rows, b_cols, push.ldb);
  const uint64_t packed_c = span_elements(1, 0, args.m, args.n, push.ldc);
  const uint64_t sa = args.stride_a.value_or(packed_a), sb = args.stride_b.value_or(packed_b),
                 sc = args.stride_c.value_or(packed_c);
  if (sa > UINT32_MAX || sb > UINT32_MAX || sc > UINT32_MAX)
    throw Error(shape_of(args) + ": batch strides exceed 32-bit indexing");
  push.stride_a = uint32_t(sa);
  push.stride_b = uint32_t(sb);
  push.stride_c = uint32_t(sc);
  push.alpha = args.alpha;
  push.beta = args.beta;
  o.a_elements = span_elements(args.batch, sa, a_rows, a_cols, push.lda);
  o.b_elements = span_elements(args.batch, sb, b_rows, b_cols, push.ldb);
  const uint64_t c_elements = span_elements(args.batch, sc, args.m, args.n, push.ldc);
  check_operand(args, "A", args.a, o.a_elements, esize);
  check_operand(args, "B", args.b, o.b_elements, esize);
  check_operand(args, "C", args.c, c_elements, esize);
  if (args.batch > 1 && sc < packed_c)
    throw Error(shape_of(args) + ": stride_c " + std::to_string(sc) +
                " makes batch items of C overlap");

  // Binding 3 is read only by the bias and residual epilogues; otherwise A stands in for it.
  o.extra = args.a;
  if (args.epilogue == Epilogue::bias || args.epilogue == Epilogue::bias_relu) {
    check_operand(args, "bias", args.bias, args.n, esize);
    o.extra = args.bias;
  } else if (args.epilogue == Epilogue::residual) {
    check_operand(args, "residual", args.residual, c_elements, esize);
    if (args.residual.overlaps(args.c))
      throw Error(shape_of(args) + ": the residual must not overlap C (use beta = 1 instead)");
    o.extra = args.residual;
  }
  return o;
}

// The 4-vector (or 8-half) read modes the operands' alignment allows (the VEC constant).
uint32_t vector_reads(const MatmulArgs& args, const MatmulConfig& cfg, const Push& push) {
  // The direct path reads k-contiguous operands (A not transposed, B transposed) as 4-vectors
  // along k when their row and batch strides are multiples of 4, an m-contiguous A (transposed)
  // as 4-vectors along m when m is too, and an n-contiguous B (not transposed) along n when n is
  // too (each lane then owns runs of 4 columns, so its block must be a multiple of 4 wide).
  uint32_t vec = 0;
  if (cfg.khr || cfg.nv2) {
    // Tiles are staged (KHR) or loaded through tensor layouts (coopmat2), and C written, in runs
    // of 8 halves (16 bytes) where aligned.
    if (runs_of_8(push.lda, push.stride_a, args.a)) vec |= 1;
    if (runs_of_8(push.ldb, push.stride_b, args.b)) vec |= 2;
    if (runs_of_8(push.ldc, push.stride_c, args.c)) vec |= 4;
    if (args.epilogue == Epilogue::residual && runs_of_8(push.ldc, push.stride_c, args.residual))
      vec |= 8;
  } else if (cfg.coopmat) {
    // Tiles are staged along each operand's contiguous dimension as 4-vectors (8 bytes) where
    // the row and batch strides and the binding's offset keep every run of 4 aligned.
    if (push.lda % 4 == 0 && push.stride_a % 4 == 0 && args.a.offset % 8 == 0) vec |= 1;
    if (push.ldb % 4 == 0 && push.stride_b % 4 == 0 && args.b.offset % 8 == 0) vec |= 2;
  } else if (!cfg.shared) {
    if (!args.trans_a && push.lda % 4 == 0 && push.stride_a % 4 == 0) vec |= 1;
    if (args.trans_b && push.ldb % 4 == 0 && push.stride_b % 4 == 0) vec |= 2;
    if (!args.trans_b && cfg.tn % 4 == 0 && args.n % 4 == 0 && push.ldb % 4 == 0 &&
        push.stride_b % 4 == 0)
      vec |= 4;
    if (args.trans_a && args.m % 4 == 0 && push.lda % 4 == 0 && push.stride_a % 4 == 0) vec |= 8;
  }
  return vec;
}

// Whether A and B are read through texel views: asked for, or the default, and they fit.
bool texel_reads(const Device& dev, const MatmulArgs& args, const MatmulConfig& cfg,
                 const Operands& o) {
  const DeviceInfo& info = dev.info();
  if (cfg.coopmat && args.texel_views.value_or(false))
    throw Error(shape_of(args) +
                ": texel views apply to the matmul kernel, not to configuration '" + cfg.name +
                "'");
  if (cfg.coopmat || !texel_views_wanted(args, cfg, dev)) return false;
  const bool texel = texel_view_fits(args.a, o.a_elements, args.dtype, info) &&
                     texel_view_fits(args.b, o.b_elements, args.dtype, info);
  if (!texel && args.texel_views.value_or(false))
    throw Error(shape_of(args) + ": texel views asked for, but A or B is not " +
                std::to_string(info.texel_buffer_alignment) +
                "-byte aligned, or does not end on a whole texel of 4 elements");
  return texel;
}

// The pipeline: shader variant, specialization constants, subgroup size.
KernelSpec kernel_spec(const Device& dev, const MatmulArgs& args, const MatmulConfig& cfg,
                       const Push& push, bool texel, bool c_f32) {
  const DeviceInfo& info = dev.info();
  const bool emulated = args.emulate_coopmat;
  const uint32_t vec = vector_reads(args, cfg, push);
  // The coopmat kernels read the same constants (tm, tn: one subgroup's block; shared unused).
  const uint32_t invocations = cfg.invocations(info, emulated);
  const char* shader = cfg.nv2                    ? cfg.coopmat_kernel()
                       : cfg.khr                  ? (emulated        ? k_coopmat_khr_emulated_shader
                                                     : info.is_cpu() ? k_coopmat_khr_rolled_shader
                                                                     : k_coopmat_khr_shader)
                       : emulated                 ? k_coopmat_emulated_shader
                       : cfg.coopmat              ? k_coopmat_shader
                       : args.dtype == DType::f16 ? (texel ? "matmul_f16_texel" : "matmul_f16")
                                                  : (texel ? "matmul_texel" : "matmul");
  // shaders/matmul.comp's direct rows hand A across lanes by subgroupShuffle, so its variants
  // declare that capability, which a device listing basic subgroup operations only cannot
  // create (VP_LUNARG_desktop_baseline_2023). There it runs the _noshuffle build, which has the
  // shared-memory rows only: a direct row is a misfit there (matmul_config_misfit, checked
  // above).
  std::string shader_name = shader;
  if (!cfg.coopmat && !info.subgroup_shuffle) shader_name += "_noshuffle";
  KernelSpec spec{shader_name,
                  4,
                  sizeof(Push),
                  {invocations, cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn, cfg.shared ? 1u : 0u,
                   args.trans_a ? 1u : 0u, args.trans_b ? 1u : 0u,
                   static_cast<uint32_t>(args.epilogue), vec, args.beta != 0.0f ? 1u : 0u}};
  if (cfg.khr) {
    // Constants 12-14: the fragment shape (emulated: 16x16x16); 15: the workgroup size again;
    // 16: the benchmarks' diagnostic bits; 17: the staging buffers.
    const CoopmatShape* shape = emulated ? nullptr : khr_coopmat_shape(cfg, info);
    spec.spec.insert(spec.spec.end(),
                     {shape ? shape->m : 16u, shape ? shape->n : 16u, shape ? shape->k : 16u,
                      invocations, args.khr_diagnostic, cfg.stages});
    // The kernel gives each subgroup one block: where the width varies, run at the default.
    if (!emulated && info.min_subgroup_size != info.max_subgroup_size)
      spec.subgroup_size = info.subgroup_size;
  }
  if (c_f32) {
    // Constant 18: C stored as fp32 (a split-k slice). The other kernels take no 12-17.
    spec.spec.resize(18, 0);
    spec.spec.push_back(1);
  }
  if (texel) spec.texel_buffers = 0b11;
  // The direct path needs the workgroup to be exactly one subgroup.
  if (!cfg.shared && info.subgroup_size != cfg.workgroup) spec.subgroup_size = cfg.workgroup;
  return spec;
}

// c_f32: C is a split-k workspace, stored as fp32 whatever the operands' storage.
void record(Device& dev, Recorder& rec, const MatmulArgs& args, const MatmulConfig& cfg,
            const Operands& o, bool c_f32 = false) {
  const DeviceInfo& info = dev.info();
  const bool texel = texel_reads(dev, args, cfg, o);
  const Kernel& k = dev.kernel(kernel_spec(dev, args, cfg, o.push, texel, c_f32));
  const std::array<uint32_t, 3> groups{ceil_div(args.n, cfg.bn), ceil_div(args.m, cfg.bm),
                                       args.batch};
  if (groups[0] > info.max_workgroup_count[0] || groups[1] > info.max_workgroup_count[1] ||
      groups[2] > info.max_workgroup_count[2])
    throw Error(shape_of(args) + ": needs " + std::to_string(groups[0]) + " x " +
                std::to_string(groups[1]) + " x " + std::to_string(groups[2]) +
                " workgroups, above the device's limits");
  const Arg c_arg = args.beta != 0.0f ? inout(args.c) : out(args.c);
  if (texel) {
    const VkFormat f = texel_format(args.dtype);
    rec.dispatch(k, {in_texels(args.a, f), in_texels(args.b, f), c_arg, in(o.extra)}, o.push,
                 groups);
  } else {
    rec.dispatch(k, {in(args.a), in(args.b), c_arg, in(o.extra)}, o.push, groups);
  }
}

// Compute units assumed where the driver does not say (DeviceInfo::compute_units): enough to
// split the one-tile matmuls of a small model, few enough not to split what fills a small GPU.
constexpr uint32_t k_default_compute_units = 16;
// A slice is at least this deep: shorter ones spend more on their partial products' traffic
// than the extra workgroups gain.
constexpr uint32_t k_min_slice_k = 256;
// Nor is a matmul of less work than this (2 m n k) split: the reduce is a second dispatch, which
// costs more than spreading the work gains (on lavapipe, 2 threads: a 24 x 40 x 4096 A^T B ran
// 5-10% slower split in two, a 32 x 64 x 8192 one 1.3-1.7x faster).
constexpr double k_min_split_flops = 16.0 * 1024 * 1024;
// Slices start at multiples of 256 bytes along k, and partial products 256 bytes apart: the
// largest minStorageBufferOffsetAlignment Vulkan allows, so the last slice's bindings
// (offsets into A, B and the workspace) are aligned on every device.
constexpr uint32_t k_split_align_bytes = 256;

bool can_split(const MatmulArgs& args, const MatmulConfig& cfg) {
  return args.batch == 1 && matmul_kernel_splits(cfg) && args.khr_diagnostic == 0;
}

}  // namespace

bool matmul_kernel_splits(const MatmulConfig& cfg) {
  return !cfg.coopmat || cfg.khr || cfg.nv2;
}

SplitK plan_matmul_split_k(const DeviceInfo& info, const MatmulArgs& args, const MatmulConfig& cfg,
                           uint64_t room) {
  const uint32_t forced = args.split_k.value_or(0);
  if (forced == 1) return {};
  if (forced > 1 && !can_split(args, cfg))
    throw Error(shape_of(args) + ": split_k " + std::to_string(forced) +
                " needs batch 1 and a kernel that stores fp32 partial products, not '" + cfg.name +
                "' at batch " + std::to_string(args.batch));
  if (!can_split(args, cfg)) return {};
  const uint32_t granule = k_split_align_bytes / dtype_bytes(args.dtype);
  const uint64_t partial_stride = (uint64_t(args.m) * args.n + k_split_align_bytes / 4 - 1) /
                                  (k_split_align_bytes / 4) * (k_split_align_bytes / 4);
  uint32_t wanted = forced;
  if (wanted == 0 && cfg.split_k) {
    // Tuned: the slices the tuner timed, as many as the workspace holds.
    wanted = uint32_t(
        std::min<uint64_t>({*cfg.split_k, k_matmul_max_split_k, room / (partial_stride * 4)}));
  } else if (wanted == 0) {
    if (2.0 * args.m * args.n * args.k < k_min_split_flops) return {};
    const uint32_t units = info.compute_units ? info.compute_units : k_default_compute_units;
    const uint64_t tiles = uint64_t(ceil_div(args.m, cfg.bm)) * ceil_div(args.n, cfg.bn);
    wanted =
        uint32_t(std::min<uint64_t>({units / tiles, args.k / k_min_slice_k, k_matmul_max_split_k}));
    wanted = uint32_t(std::min<uint64_t>(wanted, room / (partial_stride * 4)));
  }
  if (wanted < 2) return {};
  SplitK plan;
  plan.slice_k = ceil_div(ceil_div(args.k, wanted), granule) * granule;
  plan.slices = ceil_div(args.k, plan.slice_k);
  if (plan.slices < 2) {
    if (forced)
      throw Error(shape_of(args) + ": k is too short to split into " + std::to_string(forced) +
                  " slices of whole " + std::to_string(granule) + "-element runs");
    return {};
  }
  plan.partial_stride = partial_stride;
  plan.workspace_bytes = plan.slices * partial_stride * 4;
  if (plan.slices * partial_stride > UINT32_MAX)
    throw Error(shape_of(args) + ": split into " + std::to_string(plan.slices) +
                " slices, its partial products exceed 32-bit indexing");
  if (plan.workspace_bytes > room)
    throw Error(shape_of(args) + ": split_k " + std::to_string(forced) + " needs " +
                std::to_string(plan.workspace_bytes) + " bytes of workspace, which has " +
                std::to_string(room));
  return plan;
}

namespace {

struct ReducePush {
  uint32_t m, n, ldc, slices;
  float alpha, beta;
  uint32_t partial_stride;
};

// Stage 1: the slices as batch items of the chosen kernel (the last, shorter one on its own),
// storing fp32 partial products; stage 2: their sum, alpha, beta and the epilogue into C.
void record_split(Device& dev, Recorder& rec, const MatmulArgs& args, const MatmulConfig& cfg,
                  const SplitK& plan) {
  const BufferRef& ws = args.workspace;
  if (ws.overlaps(args.a) || ws.overlaps(args.b) || ws.overlaps(args.c) || ws.overlaps(args.bias) ||
      ws.overlaps(args.residual))
    throw Error(shape_of(args) + ": the split-k workspace overlaps an operand");
  const Operands whole = check_operands(args);
  const Push& push = whole.push;
  const uint32_t full = args.k / plan.slice_k, rest = args.k % plan.slice_k;

  MatmulArgs s = args;
  s.epilogue = Epilogue::none;
  s.alpha = 1.0f;
  s.beta = 0.0f;
  s.lda = push.lda;
  s.ldb = push.ldb;
  s.ldc = args.n;
  s.workspace = {};
  s.split_k = 1;
  s.k = plan.slice_k;
  s.stride_a = args.trans_a ? plan.slice_k * push.lda : plan.slice_k;
  s.stride_b = args.trans_b ? plan.slice_k : plan.slice_k * push.ldb;
  s.stride_c = uint32_t(plan.partial_stride);
  if (full > 0) {
    // Only the full slices' partials: the last slice's dispatch writes past them, so the
    // recorder puts no barrier between the two and they may run side by side.
    s.batch = full;
    s.c = ws.slice(0, full * plan.partial_stride * 4);
    record(dev, rec, s, cfg, check_operands(s), true);
  }
  if (rest > 0) {
    const uint32_t esize = dtype_bytes(args.dtype);
    const uint64_t k0 = uint64_t(full) * plan.slice_k;
    const uint64_t a_off = (args.trans_a ? k0 * push.lda : k0) * esize;
    const uint64_t b_off = (args.trans_b ? k0 : k0 * push.ldb) * esize;
    const uint64_t c_off = full * plan.partial_stride * 4;
    s.batch = 1;
    s.k = rest;
    s.a = args.a.slice(a_off, args.a.size - a_off);
    s.b = args.b.slice(b_off, args.b.size - b_off);
    s.c = ws.slice(c_off, plan.partial_stride * 4);
    record(dev, rec, s, cfg, check_operands(s), true);
  }

  const char* shader = args.dtype == DType::f16 ? "matmul_split_reduce_f16" : "matmul_split_reduce";
  constexpr uint32_t local = 256;
  const Kernel& k =
      dev.kernel({shader,
                  3,
                  sizeof(ReducePush),
                  {local, static_cast<uint32_t>(args.epilogue), args.beta != 0.0f ? 1u : 0u}});
  const ReducePush rp{
      args.m, args.n, push.ldc, plan.slices, args.alpha, args.beta, uint32_t(plan.partial_stride)};
  const Arg c_arg = args.beta != 0.0f ? inout(args.c) : out(args.c);
  rec.dispatch(k, {in(ws.slice(0, plan.workspace_bytes)), c_arg, in(whole.extra)}, rp,
               groups_1d(uint64_t(args.m) * args.n, local));
}

}  // namespace

MatmulProblem matmul_problem(const MatmulArgs& args) {
  return {args.dtype, args.trans_a, args.trans_b, args.m, args.n, args.k};
}

MatmulChoice choose_matmul(const Device& dev, const MatmulArgs& args) {
  if (args.config) return {*args.config, MatmulSource::forced, "forced by the caller"};
  return choose_matmul(dev, matmul_problem(args));
}

namespace {

// The split on this device (DeviceOptions::ops.matmul_split_k turns the automatic one off).
SplitK device_split_k(const Device& dev, const MatmulArgs& args, const MatmulConfig& cfg,
                      uint64_t room) {
  if (!args.split_k && dev.options().ops.matmul_split_k == false) return {};
  return plan_matmul_split_k(dev.info(), args, cfg, room);
}

}  // namespace

SplitK matmul_split_k(const Device& dev, const MatmulArgs& args, bool unbounded_workspace) {
  check_problem(dev, args);
  const MatmulChoice choice = choose_matmul(dev, args);
  return device_split_k(dev, args, choice.config,
                        unbounded_workspace ? UINT64_MAX : args.workspace.size);
}

// Validate, choose the kernel, record: each step its own function, so that the tests and
// `vkf bench` can ask the choice alone (choose_matmul, matmul_split_k).
void matmul(Device& dev, Recorder& rec, const MatmulArgs& args) {
  check_problem(dev, args);
  const MatmulChoice choice = choose_matmul(dev, args);
  check_config(dev, args, choice.config);
  const SplitK plan = device_split_k(dev, args, choice.config, args.workspace.size);
  if (plan.slices > 1)
    record_split(dev, rec, args, choice.config, plan);
  else
    record(dev, rec, args, choice.config, check_operands(args));
}

}  // namespace vkf::ops
