#include "engine/ops/matmul_tuning.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "engine/error.h"
#include "engine/shader_registry.h"
#include "engine/vk_coopmat_khr.h"

namespace vkf::ops {
namespace {

// A VK_NV_cooperative_matrix2 row: the workgroup's block is its whole tile.
MatmulConfig nv_coopmat2_row(const char* name, uint32_t workgroup, uint32_t bm, uint32_t bn,
                             uint32_t bk) {
  MatmulConfig c{name, workgroup, bm, bn, bk, bm, bn, true, true};
  c.nv2 = true;
  return c;
}

// Rows: name, workgroup, bm, bn, bk, tm, tn, shared[, coopmat[, khr[, stages]]].
const MatmulConfig k_configs[] = {
    // NVIDIA (Turing..Hopper): 128x128 tiles, 8x8 per thread, 16 KiB of shared memory, 256
    // threads; enough independent FMAs per thread to hide latency at 2 blocks per SM.
    {"nvidia", 256, 128, 128, 16, 8, 8, true},
    // AMD RDNA/GCN: 256 threads (4 wave64 / 8 wave32), 128x64 tiles, 8x4 per thread, 12 KiB.
    {"amd", 256, 128, 64, 16, 8, 4, true},
    // Intel Xe / Gen: smaller register files, so 128 threads on 64x64 tiles, 8x4 per thread.
    {"intel", 128, 64, 64, 16, 8, 4, true},
    // CPU devices (lavapipe, SwiftShader): no shared-memory staging (there it is plain memory
    // behind per-lane address arithmetic, plus a barrier); one 8-wide subgroup per workgroup,
    // a 32 x 8 block per lane (A shuffled across the subgroup, see shaders/matmul.comp). 32x8
    // beat 16x8, 32x4, 32x16, 24x8 and 8x8 at 1024^3 on lavapipe (64x4 falls off a cliff).
    {"cpu_direct", 8, 32, 64, 1, 32, 8, false},
    // The same for 16-wide subgroups (lavapipe with LP_NATIVE_VECTOR_WIDTH=512 on AVX-512
    // CPUs): with B transposed (B read along k), 32 x 6 a lane beat 32 x 4, 32 x 8, 16 x 8,
    // 16 x 12 and 16 x 16 at 1024^3; with B not transposed (read in 4-column runs, which need
    // a block 4k wide), 32 x 8 beat 32 x 4 and 32 x 6 (0.37 of OpenBLAS against 0.32 and 0.29).
    // These sweeps read A and B through storage buffers; CPU devices now read them through
    // texel views (MatmulArgs::texel_views), where 32 x 8 with B transposed was no faster than
    // 32 x 6 within the noise of a loaded machine (docs/performance.md).
    {"cpu_direct16", 16, 32, 96, 1, 32, 6, false},
    {"cpu_direct16_nn", 16, 32, 128, 1, 32, 8, false},
    // NVIDIA tensor cores (VK_NV_cooperative_matrix, f16 storage): 4 subgroups of 32 on a 64x64
    // tile, each a 32x32 block of 2x2 16x16 fragments, k staged 32 at a time (14 KiB of shared
    // memory). Not verified on NVIDIA hardware yet, so never chosen automatically: force it
    // (MatmulArgs::config, VKF_MATMUL_CONFIG=nvidia_coopmat in the benches) to try it.
    {"nvidia_coopmat", 128, 64, 64, 32, 32, 32, true, true},
    // The same on 128x128 tiles: 8 subgroups, each a 64x32 block of 4x2 fragments (28 KiB).
    // Twice the fragments per staged byte, for large GEMMs (the FFN, the vocabulary projection);
    // the benchmark on a GPU decides between the two.
    {"nvidia_coopmat_128", 256, 128, 128, 32, 64, 32, true, true},
    // Tensor cores on every vendor (VK_KHR_cooperative_matrix, f16 storage), chosen for f16
    // matmuls where the device lists a fitting shape. As ggml's coopmat kernel and CUTLASS's
    // mma kernels are laid out: each subgroup owns a 64x64 block, 4x4 fragments of 16x16, so
    // each fragment loaded from shared memory feeds 4 products; 4 subgroups on a 128x128 tile,
    // k staged 32 at a time (20 KiB of shared memory), the next step read into registers
    // during this one's products.
    {"khr_coopmat", 128, 128, 128, 32, 64, 64, true, true, true},
    // Smaller matmuls (decoding, and any m x n with fewer than 128 of the large tiles, which
    // would leave most of a large GPU's SMs idle): 64x64 tiles of 4 subgroups, 32x32 each.
    {"khr_coopmat_64", 128, 64, 64, 32, 32, 32, true, true, true},
    // The same with k staged 64 at a time (18 KiB): half the barriers and twice the products
    // between them, for drivers where a k-step's barriers and staging, not the products, set
    // the pace (on an H200 every KHR row ran at 0.05 of what its tensor cores reach through
    // the same extension); the tuner decides.
    {"khr_coopmat_64_k64", 128, 64, 64, 64, 32, 32, true, true, true},
    // Twice the large tile along n, 8 subgroups (32 KiB with the scratch): more reuse of each
    // staged A row for
    // the largest GEMMs (the FFN, the vocabulary projection); the benchmark on a GPU decides.
    {"khr_coopmat_256", 256, 128, 256, 32, 64, 64, true, true, true},
    // The large and small KHR tiles with two staging buffers (40 and 20 KiB): on an H200 the
    // KHR kernel ran at half its rate without barriers and staging once its loops were
    // unrolled, and a second buffer halves its barriers; the tuner decides.
    {"khr_coopmat_2stage", 128, 128, 128, 32, 64, 64, true, true, true, 2},
    {"khr_coopmat_64_2stage", 128, 64, 64, 32, 32, 32, true, true, true, 2},
    // Tensor cores through VK_NV_cooperative_matrix2 (f16 storage): the whole workgroup owns
    // the tile's accumulator and loads its blocks through tensor layouts, the driver staging
    // them (shaders/matmul_coopmat_nv2.comp). ggml's coopmat2 tiles: 128x128 and 128x256 on 256
    // invocations, 64x64 on 128, k 64 at a time. Correct on an H200, and level with the KHR rows
    // there once the kernel took ggml's stride masks and unrolled k loop (ahead at the FFN's
    // fc2, behind at most other shapes): tuner candidates, in no table.
    nv_coopmat2_row("nv_coopmat2", 256, 128, 128, 64),
    nv_coopmat2_row("nv_coopmat2_256", 256, 128, 256, 64),
    nv_coopmat2_row("nv_coopmat2_64", 128, 64, 64, 64),
    // Any conformant device: 64 threads and 2 KiB of shared memory are below every required
    // minimum (128 invocations, 16 KiB).
    {"fallback", 64, 32, 32, 8, 4, 4, true},
};

}  // namespace

std::span<const MatmulConfig> matmul_configs() {
  return k_configs;
}

const MatmulConfig& matmul_config(std::string_view name) {
  for (const MatmulConfig& c : k_configs)
    if (name == c.name) return c;
  std::string names;
  for (const MatmulConfig& c : k_configs) names += std::string(names.empty() ? "" : ", ") + c.name;
  throw Error("no matmul configuration named '" + std::string(name) + "' (have: " + names + ")");
}

// Mesa 26.1's lavapipe, the first to list VK_KHR_cooperative_matrix, crashes inside
// vkCreateComputePipelines for every KHR kernel at subgroups of 16 (LP_NATIVE_VECTOR_WIDTH=512,
// its default on AVX-512 CPUs), and compiles and runs them correctly at 8 (256 bits). Bounded by
// version so that a fixed release is not refused.
std::string known_khr_compiler_crash(const DeviceInfo& info) {
  // lavapipe's driverInfo reads "Mesa 26.1.6-1~bpo13+1 (LLVM 19.1.7)" (its driverVersion was
  // 0.0.1 up to Mesa 22.3).
  unsigned major = 0, minor = 0;
  if (info.driver_name != "llvmpipe" || info.subgroup_size <= 8 ||
      std::sscanf(info.driver_info.c_str(), "Mesa %u.%u", &major, &minor) != 2)
    return "";
  if (major > 26 || (major == 26 && minor > 1)) return "";
  return "lavapipe (Mesa " + std::to_string(major) + "." + std::to_string(minor) +
         ") crashes compiling the KHR cooperative-matrix kernel at subgroups of " +
         std::to_string(info.subgroup_size) + "; at 256 bits (LP_NATIVE_VECTOR_WIDTH=256, " +
         "subgroups of 8) it runs";
}

namespace {

// Why `info` cannot run the NV coopmat2 row `c`, or "" (see matmul_config_misfit).
std::string nv_coopmat2_misfit(const MatmulConfig& c, const DeviceInfo& info) {
  const Coopmat2Info& nv2 = info.nv_coopmat2;
  if (!nv2.listed)
    return "no VK_NV_cooperative_matrix2 (with VK_KHR_cooperative_matrix for compute shaders)";
  std::string lacks;
  for (const auto& [has, what] : {std::pair{nv2.workgroup_scope, "workgroup scope"},
                                  {nv2.flexible_dimensions, "flexible dimensions"},
                                  {nv2.tensor_addressing, "tensor addressing"},
                                  {nv2.per_element_operations, "per-element operations"}})
    if (!has) lacks += (lacks.empty() ? "" : ", ") + std::string(what);
  if (!lacks.empty()) return "VK_NV_cooperative_matrix2 without " + lacks;
  // The kernel is SPIR-V 1.6; the instance asks for 1.3 wherever the loader has it.
  if (info.api_version < VK_API_VERSION_1_3)
    return "Vulkan " + std::to_string(VK_API_VERSION_MAJOR(info.api_version)) + "." +
           std::to_string(VK_API_VERSION_MINOR(info.api_version)) +
           ": the coopmat2 kernel (SPIR-V 1.6) needs 1.3";
  if (!info.storage16) return "no storageBuffer16BitAccess";
  if (!info.fp16) return "no shaderFloat16";
  if (!info.vulkan_memory_model) return "no vulkanMemoryModel";
  if (c.tm != c.bm || c.tn != c.bn) return "a coopmat2 row's block is its tile (tm = bm, tn = bn)";
  if (c.workgroup > nv2.max_workgroup_size)
    return "a workgroup of " + std::to_string(c.workgroup) +
           " exceeds the workgroup-scope limit of " + std::to_string(nv2.max_workgroup_size);
  if (std::max({c.bm, c.bn, c.bk}) > nv2.max_dimension)
    return "a tile of " + std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
           std::to_string(c.bk) + " exceeds the flexible dimensions' limit of " +
           std::to_string(nv2.max_dimension);
  // Every matrix type the kernel declares must be one a listed shape holds: the fp16 A and B
  // blocks and fp32 accumulator of the product, and the fp16 accumulator C is converted to
  // before its store (an entry whose C or result is fp16).
  auto divides = [&](const CoopmatShape& s) {
    return s.scope == VK_SCOPE_WORKGROUP_KHR && s.workgroup_invocations == c.workgroup && s.m &&
           s.n && s.k && c.bm % s.m == 0 && c.bn % s.n == 0 && c.bk % s.k == 0;
  };
  const auto& shapes = nv2.flexible_shapes;
  const bool product = std::any_of(shapes.begin(), shapes.end(), [&](const CoopmatShape& s) {
    return s.f16_f32() && divides(s);
  });
  const bool f16_out = std::any_of(shapes.begin(), shapes.end(), [&](const CoopmatShape& s) {
    return (s.c_type == VK_COMPONENT_TYPE_FLOAT16_KHR ||
            s.result_type == VK_COMPONENT_TYPE_FLOAT16_KHR) &&
           divides(s);
  });
  if (product && f16_out) return "";
  std::string listed;
  for (const CoopmatShape& s : shapes) listed += (listed.empty() ? "" : ", ") + s.describe();
  return std::string("no VK_NV_cooperative_matrix2 flexible shape with ") +
         (product ? "an fp16 C or result" : "fp16 A, B and fp32 C, result") +
         " at workgroup scope for " + std::to_string(c.workgroup) +
         " invocations whose granularities divide " + std::to_string(c.bm) + " x " +
         std::to_string(c.bn) + " x " + std::to_string(c.bk) +
         " (listed: " + (listed.empty() ? "none" : listed) + ")";
}

// The tiling itself, whatever the device: what the kernels assume of a configuration without
// checking it (a tuning file's, or a forced one, may be anything). A workgroup that does not
// cover its tile leaves part of C unwritten and wrong, silently; a huge register block compiles
// for minutes.
std::string geometry_misfit(const MatmulConfig& c, bool emulated_coopmat) {
  auto n = [](uint32_t v) { return std::to_string(v); };
  if (!c.workgroup || !c.bm || !c.bn || !c.bk || !c.tm || !c.tn)
    return "a zero size (workgroup " + n(c.workgroup) + ", tile " + n(c.bm) + "x" + n(c.bn) + "x" +
           n(c.bk) + ", block " + n(c.tm) + "x" + n(c.tn) + ")";
  if (c.bm % c.tm || c.bn % c.tn)
    return "its tile " + n(c.bm) + "x" + n(c.bn) + " is not a multiple of its block " + n(c.tm) +
           "x" + n(c.tn);
  if (c.nv2) return "";  // the block is the tile (nv_coopmat2_misfit)
  if (c.coopmat) {
    // 16x16x16 fragments: the NV kernel's, and the emulated kernels'.
    if ((!c.khr || emulated_coopmat) && (c.tm % 16 || c.tn % 16 || c.bk % 16))
      return "a block of " + n(c.tm) + "x" + n(c.tn) + " with k steps of " + n(c.bk) +
             " is not made of 16x16x16 fragments";
    return "";
  }
  // shaders/matmul.comp: acc[TM][TN] in each invocation.
  if (uint64_t(c.tm) * c.tn > k_matmul_max_block)
    return "a block of " + n(c.tm) + "x" + n(c.tn) + " exceeds " + n(k_matmul_max_block) +
           " accumulators an invocation";
  if (c.shared) {
    if (c.subgroups() != c.workgroup)
      return "a workgroup of " + n(c.workgroup) + " does not cover its tile: " + n(c.bm) + "x" +
             n(c.bn) + " in blocks of " + n(c.tm) + "x" + n(c.tn) + " needs " + n(c.subgroups()) +
             " invocations";
    return "";
  }
  // The direct path: one subgroup shares the tile's rows (fetched S at a time) and owns tn
  // columns a lane.
  if (c.bm != c.tm || c.tm % c.workgroup || uint64_t(c.workgroup) * c.tn != c.bn)
    return "a direct-path tile of " + n(c.bm) + "x" + n(c.bn) + " with blocks of " + n(c.tm) + "x" +
           n(c.tn) + " on " + n(c.workgroup) +
           " lanes (it needs bm = tm, a multiple of the lanes, and bn = lanes x tn)";
  return "";
}

}  // namespace

std::string matmul_config_misfit(const MatmulConfig& c, const DeviceInfo& info,
                                 bool emulated_coopmat) {
  if (std::string why = geometry_misfit(c, emulated_coopmat); !why.empty()) return why;
  const uint32_t invocations = c.invocations(info, emulated_coopmat);
  const std::string wg = std::to_string(invocations);
  uint32_t frag_m = 16;
  if (c.stages != 1 && !(c.khr && c.stages == 2))
    return std::to_string(c.stages) + " staging buffers (1, or 2 on a KHR row)";
  if (c.nv2) {
    if (const std::string why = nv_coopmat2_misfit(c, info); !why.empty()) return why;
  } else if (c.coopmat && emulated_coopmat) {
    if (!info.storage16) return "no storageBuffer16BitAccess";
    if (!info.fp16) return "no shaderFloat16 (fp16 shared-memory tiles)";
    // shaders/common/coopmat*_fragment.glsl: virtual subgroups of 32 invocations, 16x16x16.
    if (c.subgroups() * 32 != invocations)
      return "a workgroup of " + wg + " is not " + std::to_string(c.subgroups()) +
             " emulated subgroups of 32";
  } else if (c.khr) {
    if (!info.khr_coopmat)
      return "no VK_KHR_cooperative_matrix (with its feature, for compute shaders)";
    const CoopmatShape* shape = khr_coopmat_shape(c, info);
    if (shape == nullptr) {
      std::string listed;
      for (const CoopmatShape& s : info.khr_coopmat_shapes)
        listed += (listed.empty() ? "" : ", ") + s.describe();
      return "no VK_KHR_cooperative_matrix shape with fp16 A, B and fp32 C, result at subgroup "
             "scope whose M, N, K (multiples of 8) divide " +
             std::to_string(c.tm) + " x " + std::to_string(c.tn) + " x " + std::to_string(c.bk) +
             " (listed: " + (listed.empty() ? "none" : listed) + ")";
    }
    frag_m = shape->m;
    if (const std::string why = known_khr_compiler_crash(info); !why.empty()) return why;
    if (!info.storage16) return "no storageBuffer16BitAccess";
    if (!info.fp16) return "no shaderFloat16 (fp16 fragments and shared-memory tiles)";
    if (!info.vulkan_memory_model) return "no vulkanMemoryModel";
    // A device whose subgroup width varies runs the kernel at its default width, pinned.
    if (info.min_subgroup_size != info.max_subgroup_size && !info.subgroup_size_control)
      return "subgroup sizes vary (" + std::to_string(info.min_subgroup_size) + ".." +
             std::to_string(info.max_subgroup_size) + ") and cannot be pinned";
  } else if (c.coopmat) {
    if (!info.nv_coopmat_f16_16x16x16)
      return "no VK_NV_cooperative_matrix shape 16x16x16 with fp16 A, B and fp32 C, D at "
             "subgroup scope";
    if (!info.storage16) return "no storageBuffer16BitAccess";
    if (!info.fp16) return "no shaderFloat16 (fp16 fragments and shared-memory tiles)";
    if (!info.vulkan_memory_model) return "no vulkanMemoryModel";
    // The shader gives each subgroup one block of C: the workgroup must be exactly that many.
    if (info.subgroup_size * c.subgroups() != c.workgroup)
      return "a workgroup of " + wg + " is not " + std::to_string(c.subgroups()) +
             " subgroups of " + std::to_string(info.subgroup_size);
  } else if (!c.shared) {
    // The direct (no shared memory) path shares A across one subgroup with subgroupShuffle.
    if (!info.subgroup_shuffle) return "no subgroupShuffle in compute shaders";
    if (info.subgroup_size != c.workgroup &&
        !(info.subgroup_size_control && info.min_subgroup_size <= c.workgroup &&
          c.workgroup <= info.max_subgroup_size))
      return "needs subgroups of " + wg + " but has " + std::to_string(info.subgroup_size);
  }
  if (invocations > info.max_workgroup_invocations || invocations > info.max_workgroup_size[0])
    return "a workgroup of " + wg + " exceeds the limit of " +
           std::to_string(std::min(info.max_workgroup_invocations, info.max_workgroup_size[0]));
  if (c.shared_bytes(frag_m) > info.shared_memory_bytes)
    return std::to_string(c.shared_bytes(frag_m)) + " bytes of shared memory exceed the limit of " +
           std::to_string(info.shared_memory_bytes);
  return "";
}

bool matmul_config_fits(const MatmulConfig& c, const DeviceInfo& info) {
  return matmul_config_misfit(c, info).empty();
}

const CoopmatShape* khr_coopmat_shape(const MatmulConfig& c, const DeviceInfo& info) {
  const CoopmatShape* best = nullptr;
  for (const CoopmatShape& s : info.khr_coopmat_shapes) {
    if (!s.f16_f32_subgroup() || s.m == 0 || s.n == 0 || s.k == 0) continue;
    if (s.m % 8 || s.n % 8 || s.k % 8 || c.tm % s.m || c.tn % s.n || c.bk % s.k) continue;
    if (!best || uint64_t(s.m) * s.n * s.k > uint64_t(best->m) * best->n * best->k) best = &s;
  }
  return best;
}

std::string MatmulConfig::describe() const {
  std::string s = "wg" + std::to_string(workgroup) + " " + std::to_string(bm) + "x" +
                  std::to_string(bn) + "x" + std::to_string(bk) + " t" + std::to_string(tm) + "x" +
                  std::to_string(tn);
  s += nv2       ? " nv_coopmat2"
       : khr     ? " khr"
       : coopmat ? " nv_coopmat"
       : shared  ? " shared"
                 : " direct";
  if (stages > 1) s += " stages" + std::to_string(stages);
  if (texel) s += *texel ? " texel" : " storage";
  if (split_k) s += *split_k > 1 ? " split" + std::to_string(*split_k) : " unsplit";
  return s;
}

TableChoice table_matmul_config(const DeviceInfo& info, bool b_transposed, DType dtype, uint32_t m,
                                uint32_t n) {
  // Tensor cores for f16 storage on GPUs. Not on CPU devices: Mesa's lavapipe lists
  // VK_KHR_cooperative_matrix (Mesa 26), but runs its fragments in plain vector code, slower
  // than its own f16 row (docs/performance.md, the Debian 13 tier).
  if (dtype == DType::f16 && info.khr_coopmat && !info.is_cpu() &&
      !shaders::find("matmul_coopmat_khr").empty()) {
    const uint64_t large_tiles = uint64_t((m + 127) / 128) * ((n + 127) / 128);
    const MatmulConfig& large = matmul_config("khr_coopmat");
    const MatmulConfig& small = matmul_config("khr_coopmat_64");
    if ((m == 0 || large_tiles >= 128) && matmul_config_fits(large, info))
      return {&large, "f16 on a GPU with VK_KHR_cooperative_matrix, at least 128 large tiles"};
    if (matmul_config_fits(small, info))
      return {&small, "f16 on a GPU with VK_KHR_cooperative_matrix, under 128 large tiles"};
  }
  const char* name = "fallback";
  std::string why;
  if (info.is_cpu()) {
    name = info.subgroup_size != 16 ? "cpu_direct"
           : b_transposed           ? "cpu_direct16"
                                    : "cpu_direct16_nn";
    why = "CPU device, subgroups of " + std::to_string(info.subgroup_size) +
          (info.subgroup_size != 16 ? ""
           : b_transposed           ? ", B transposed"
                                    : ", B not transposed");
  } else if (info.vendor == Vendor::nvidia) {
    name = "nvidia";
  } else if (info.vendor == Vendor::amd) {
    name = "amd";
  } else if (info.vendor == Vendor::intel) {
    name = "intel";
  }
  if (why.empty())
    why = std::string(name) == "fallback" ? "no row for vendor " + info.vendor_name()
                                          : "vendor " + info.vendor_name();
  const MatmulConfig& c = matmul_config(name);
  if (const std::string misfit = matmul_config_misfit(c, info); !misfit.empty())
    return {&k_configs[std::size(k_configs) - 1],
            "the " + std::string(name) + " row does not fit: " + misfit};
  return {&c, why};
}

const MatmulConfig& choose_matmul_config(const DeviceInfo& info, bool b_transposed, DType dtype,
                                         uint32_t m, uint32_t n) {
  return *table_matmul_config(info, b_transposed, dtype, m, n).config;
}

}  // namespace vkf::ops
