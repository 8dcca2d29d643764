// ops::matmul against the double-precision reference, for EVERY row of the tuning table and both
// storage types, so the tiles other vendors' GPUs take are exercised on lavapipe too.
//
// Tolerances, relative to the sum of the magnitudes of the terms of each output
// (|alpha| sum_k |a b| + |beta c| + |bias| + |r|):
//   f32 storage: 1e-4 (fp32 accumulation over k <= 129 errs by at most ~k * 6e-8).
//   f16 storage: 2e-3; the reference rounds its inputs to fp16, so what remains is fp32
//                accumulation plus one fp16 rounding of the stored result (2^-11 relative).
// Elements outside the written [m, n] grid (row padding, batch gaps, guard zones before and after
// C) must come back bit for bit unchanged.
//
// Tensor-core (coopmat) rows are f16 only and need VK_NV_cooperative_matrix (an NVIDIA device)
// or VK_KHR_cooperative_matrix (NVIDIA, AMD, Intel GPUs; Mesa 26's lavapipe, which the Debian 13
// tier runs them on: scripts/test-debian13): they have their own test cases, skipped, saying
// why, where the build or the device lacks them (Debian 12's lavapipe). Their kernels also run
// everywhere with their fragment products emulated in plain arithmetic, which checks all of them
// but the tensor-core instructions.
#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "engine/ops/matmul.h"
#include "engine/shader_registry.h"
#include "reference/matmul.h"
#include "reference/matmul_case.h"
#include "reference/stored.h"
#include "tests/support/f16_storage.h"
#include "tests/support/fake_devices.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

// The problem (shape, transposes, padding, alpha, beta, epilogue, B broadcast, split-k) as the
// matmul harness poses it; the fields after split_k are set per run.
using Case = ref::MatmulCase;

// Run on every tuning-table row and storage type. Together they cover sizes not divisible by
// any tile (1, 7, 9, 33, 65, 70, 127, 129), every transpose pair, batch > 1 (and a B broadcast
// over the batch), alpha/beta not 0/1, each epilogue, padded rows, and on the direct path every
// 4-vector read mode (VEC = 1, 2, 3, 4 + 8 and 0) with a k tail that is not a multiple of 4.
// Each case is its own pipeline, and pipeline compilation is most of this test's cold time on
// lavapipe, hence five cases per row; k_extra_cases run on the device's own row only.
const Case k_cases[] = {
    // nn, A rows 4-aligned (lda = 36): VEC = 1, k tail of 1.
    {65, 127, 33, 1, false, false, 3, 1.0f, 0.0f, ops::Epilogue::none},
    // nt (PyTorch Linear), lda = ldb = 72: VEC = 3, k tail of 2; beta reads C.
    {37, 70, 70, 3, false, true, 2, 1.0f, 0.5f, ops::Epilogue::bias},
    // tn: no 4-vector reads (VEC = 0); B broadcast over the batch.
    {33, 9, 129, 3, true, false, 0, 0.5f, 0.0f, ops::Epilogue::bias_relu, true},
    // tt, ldb = 36: VEC = 2.
    {7, 33, 32, 2, true, true, 4, -1.5f, 0.75f, ops::Epilogue::residual},
    // tn, m = 28 (lda = 32) and n = 100 (ldb = 104): A read along m (VEC bit 3) and B along n
    // (VEC bit 2, on direct rows 4k wide), with partial tiles and runs clamped past m and n;
    // k tail of 3.
    {28, 100, 39, 2, true, false, 4, 1.0f, 0.0f, ops::Epilogue::bias_relu},
};
// Coopmat rows (64x64 and 128x128 tiles, 32x32 and 64x32 per subgroup, k steps of 32 in 16-deep
// fragments): full tiles, fragment and k edges inside a tile, partial second tiles of either
// size, every transpose pair with 4-aligned strides (the 4-vector staging) and without, and a k
// that is one fragment past a step.
const Case k_coopmat_cases[] = {
    {64, 64, 64, 1, false, false, 0, 1.0f, 0.0f, ops::Epilogue::none},
    {128, 192, 96, 2, false, true, 0, 1.0f, 0.25f, ops::Epilogue::bias},
    {80, 48, 48, 1, true, false, 8, 2.0f, 0.0f, ops::Epilogue::bias_relu},
    {130, 70, 50, 2, true, true, 0, 1.0f, 0.0f, ops::Epilogue::residual},
    {17, 200, 300, 1, false, false, 1, 0.5f, 0.0f, ops::Epilogue::none},
};
// KHR rows (64x64, 128x128 and 128x256 tiles, k steps of 32 with the next one prefetched):
// several k steps (the prefetch), whole large tiles, partial ones past 128 and 256, and row
// strides that are multiples of 8 (16-byte staging of A and B, 16-byte stores and reads of C and
// R: VEC = 15) or not.
const Case k_khr_cases[] = {
    {256, 256, 64, 1, false, true, 0, 1.0f, 0.0f, ops::Epilogue::bias},
    {200, 136, 72, 2, false, false, 8, 1.0f, 0.5f, ops::Epilogue::residual},
    {72, 264, 40, 1, true, true, 0, 1.0f, 0.0f, ops::Epilogue::bias_relu},
    {33, 65, 520, 1, true, false, 3, -1.0f, 0.0f, ops::Epilogue::none},
};
// The coopmat2 kernel's unclamped path (a tile wholly inside C, its whole k blocks of 64) runs
// its k loop 256 at a time, then the rest: k = 576 is two unrolled runs and one step more, on
// every coopmat2 row's tiles. Aligned runs of 8 (pad 0 and 8) and not (pad 4: no stride masks).
const Case k_nv2_unrolled_cases[] = {
    {128, 256, 576, 2, false, true, 0, 1.0f, 0.0f, ops::Epilogue::bias},
    {128, 256, 576, 1, true, false, 8, 0.5f, 1.0f, ops::Epilogue::residual},
    {128, 256, 576, 1, false, false, 4, 1.0f, 0.0f, ops::Epilogue::none},
    // Whole tiles with k = 9 blocks of 64 and 24 more: unrolled and single unclamped steps,
    // then one clamped step for the partial block.
    {128, 256, 600, 1, false, true, 0, 1.0f, 0.0f, ops::Epilogue::bias},
    {256, 128, 600, 2, true, false, 8, 0.5f, 1.0f, ops::Epilogue::bias_relu},
};
// Split-k (batch 1): slices of whole 256-byte runs of k with a shorter last one (700 in 3, 1000
// in 4, 900 in as many as 16: the bias gradient's 1 x n form), slices that divide k (512 in 2),
// every transpose pair, and alpha, beta and each epilogue applied once, after the sum.
const Case k_split_cases[] = {
    {37, 70, 700, 1, false, true, 2, 1.0f, 0.5f, ops::Epilogue::bias, false, 3},
    {33, 9, 1000, 1, true, false, 0, 0.5f, 0.0f, ops::Epilogue::bias_relu, false, 4},
    {65, 127, 512, 1, false, false, 3, -1.5f, 0.75f, ops::Epilogue::residual, false, 2},
    {1, 130, 900, 1, false, false, 0, 1.0f, 1.0f, ops::Epilogue::none, false, 16},
    {100, 132, 600, 1, true, true, 0, 1.0f, 1.0f, ops::Epilogue::none, false, 2},
};
const Case k_extra_cases[] = {
    {1, 1, 1, 1, false, false, 0, 1.0f, 0.0f, ops::Epilogue::none},
    {129, 65, 7, 1, false, true, 0, 1.0f, 1.0f, ops::Epilogue::none},
    {127, 129, 127, 1, false, false, 5, 2.0f, -0.5f, ops::Epilogue::bias},
    {16, 64, 1, 2, false, true, 0, 1.0f, 0.0f, ops::Epilogue::residual},
    // B read in 4-column runs on the CPU rows (n = 132: a partial tile on every width), as A B
    // and as A^T B (the weight gradient's form).
    {100, 132, 64, 1, false, false, 0, 1.0f, 0.0f, ops::Epilogue::none},
    {100, 132, 66, 2, true, false, 0, 1.0f, 0.0f, ops::Epilogue::bias},
};

constexpr uint32_t k_guard = 16;  // elements of poison before and after C's range

using ref::stored;

void upload(Device& dev, const BufferRef& dst, const std::vector<float>& v, DType t) {
  ref::upload_stored(dev, dst, v, t);
}

std::vector<float> download(Device& dev, const BufferRef& src, size_t n, DType t) {
  return ref::download_stored(dev, src, n, t);
}

// Runs c through the matmul harness (reference/matmul_case.h) on row cfg in storage type t: C
// poisoned where beta is 0, guard zones of poison around it that must come back unchanged, and
// every element within the tolerance relative to the sum of |terms|.
// texel: MatmulArgs::texel_views (true: A and B through texel views, false: storage buffers,
// nullopt: the engine's choice).
// c.split_k > 1: at most that many k slices (MatmulArgs::split_k) in a poisoned workspace, and
// the recording must show the split (its reduce kernel).
void run_case(Device& dev, const ops::MatmulConfig& cfg, DType t, Case c, uint32_t seed,
              bool emulate_coopmat = false, std::optional<bool> texel = std::nullopt) {
  c.dtype = t;
  c.config = &cfg;
  c.emulate_coopmat = emulate_coopmat;
  c.texel_views = texel;
  c.guard = k_guard;
  INFO(c.describe());
  std::mt19937 rng(seed);
  const ref::MatmulRun run(dev, c, rng);
  const ops::SplitK& plan = run.split();
  if (c.split_k > 1) REQUIRE(plan.slices > 1);
  INFO(plan.slices << " slices of " << plan.slice_k);
  Recorder rec(dev);
  run.record(rec);
  Sequence seq = rec.finish();
  const auto& kernels = seq.kernel_names();
  const bool reduced = std::find_if(kernels.begin(), kernels.end(), [](const std::string& k) {
                         return k.rfind("matmul_split_reduce", 0) == 0;
                       }) != kernels.end();
  CHECK(reduced == (plan.slices > 1));
  // The slices' dispatches write disjoint partials, so the one barrier is before the reduce.
  if (plan.slices > 1) CHECK(seq.barrier_count() == 1);
  seq.run();
  const ref::Comparison cmp = run.compare(ref::matmul_tolerance(t));
  INFO(cmp.describe() << " (value " << cmp.worst_index() << " of C's buffer)");
  CHECK(cmp.ok());
}

}  // namespace

namespace {

// Which rows a sweep runs: the direct rows (SHARED = 0, the CPU devices' rows) are built around
// the subgroup, one row per subgroup width; the shared-memory rows use no subgroup operation.
enum class Rows { all, direct, shared };

void check_every_row(bool texel, Rows rows = Rows::all) {
  Device& dev = test::device();
  std::vector<DType> types{DType::f32};
  if (dev.info().storage16)
    types.push_back(DType::f16);
  else
    WARN(dev.label() << " has no 16-bit storage: the f16 variant is not tested");
  for (const ops::MatmulConfig& cfg : ops::matmul_configs()) {
    // f16 only and vendor-specific: see "the NV cooperative-matrix rows" below.
    if (cfg.coopmat) continue;
    if ((rows == Rows::direct && cfg.shared) || (rows == Rows::shared && !cfg.shared)) continue;
    // The direct rows are each for one subgroup width (lavapipe's is fixed per process: 8, or
    // 16 under LP_NATIVE_VECTOR_WIDTH=512; scripts/test runs the shader tests at both).
    if (!cfg.shared && !ops::matmul_config_fits(cfg, dev.info())) {
      WARN("row " << cfg.name << " needs subgroups of " << cfg.workgroup << "; " << dev.label()
                  << " has " << dev.info().subgroup_size << ": not run here");
      continue;
    }
    REQUIRE(ops::matmul_config_fits(cfg, dev.info()));
    for (DType t : types) {
      uint32_t seed = 1;
      for (const Case& c : k_cases) run_case(dev, cfg, t, c, seed += 10, false, texel);
      for (const Case& c : k_split_cases) run_case(dev, cfg, t, c, seed += 10, false, texel);
    }
  }
}

// Every case the tensor-core rows run in f16: the f16 storage tests' (shapes, transposes,
// epilogues, batches, padding, B broadcast), then edges of the fragment tiling, then the large
// tiles' (whole and partial 128x128 tiles, k not a multiple of the step).
void run_tensor_core_cases(Device& dev, const ops::MatmulConfig& cfg, uint32_t seed) {
  for (const Case& c : k_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
  for (const Case& c : k_extra_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
  for (const Case& c : k_coopmat_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
  for (const Case& c : k_khr_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
  for (const Case& c : k_split_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
}

}  // namespace

// Storage-buffer operands: what GPUs run.
VKF_TEST_CASE("matmul matches the reference for every tuning-table row", "[shaders][matmul]") {
  check_every_row(false);
}

// A and B through texel views: what CPU devices run (MatmulArgs::texel_views), and every other
// row too, since any device may be given them. Two cases, so that a run at another subgroup
// width (scripts/test's second pass) can take the direct rows alone: the shared-memory rows'
// code does not depend on the width (at 16 lanes they took lavapipe about 40 s more to compile).
VKF_TEST_CASE("matmul through texel views matches the reference for every direct row",
              "[shaders][matmul][texel]") {
  check_every_row(true, Rows::direct);
}

VKF_TEST_CASE("matmul through texel views matches the reference for every shared-memory row",
              "[shaders][matmul][texel]") {
  check_every_row(true, Rows::shared);
}

VKF_TEST_CASE("matmul: the NV cooperative-matrix rows match the reference (f16)",
              "[shaders][matmul][coopmat]") {
  Device& dev = test::device();
  for (const ops::MatmulConfig& cfg : ops::matmul_configs()) {
    if (!cfg.coopmat || cfg.khr || cfg.nv2) continue;
    // VKF_SKIP ends the test case: every coopmat row needs the same kernel and features.
    if (!ops::matmul_coopmat_built())
      VKF_SKIP("row " << cfg.name
                      << " not run: this build has no matmul_coopmat kernel (glslc lacked "
                         "GL_NV_cooperative_matrix at configure time)");
    if (const std::string why = ops::matmul_config_misfit(cfg, dev.info()); !why.empty())
      VKF_SKIP("row " << cfg.name << " not run: " << dev.label() << ": " << why);
    // Everything the f16 storage tests use (shapes, transposes, epilogues, batches, padding,
    // B broadcast), then edges specific to the fragment tiling.
    uint32_t seed = 1;
    for (const Case& c : k_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
    for (const Case& c : k_extra_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
    for (const Case& c : k_coopmat_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
  }
}

// The KHR rows on the device's own cooperative matrices: on a GPU, or on Mesa 26's lavapipe (the
// Debian 13 tier), whose fragments are real SPIR-V cooperative-matrix operations lowered by the
// driver. Every case of the other rows, then the KHR rows' own; on a CPU device the 128x128 and
// 128x256 rows run two of them (whole large tiles and two k steps; 17 k steps, partial tiles and
// scalar staging), as lavapipe's only shape is 8x8x8 and it takes 30-40 s of CPU to compile each
// of their pipelines (64 fragments a subgroup), against about 5 s for the 64x64 row's.
VKF_TEST_CASE("matmul: the KHR cooperative-matrix rows match the reference (f16)",
              "[shaders][matmul][coopmat][khr]") {
  Device& dev = test::device();
  if (!ops::matmul_coopmat_khr_built())
    VKF_SKIP(
        "KHR rows not run: this build has no matmul_coopmat_khr kernel (glslc lacked "
        "GL_KHR_cooperative_matrix at configure time)");
  // A row the device cannot hold (lavapipe's 32 KiB of shared memory against the large
  // two-buffer row's 40) is named and passed over; the case is skipped only if none runs.
  std::string not_run;
  bool any_run = false;
  for (const ops::MatmulConfig& cfg : ops::matmul_configs()) {
    if (!cfg.khr) continue;
    if (const std::string why = ops::matmul_config_misfit(cfg, dev.info()); !why.empty()) {
      not_run += "row " + cfg.name + " not run: " + why + "; ";
      continue;
    }
    any_run = true;
    const CoopmatShape* shape = ops::khr_coopmat_shape(cfg, dev.info());
    REQUIRE(shape != nullptr);
    INFO("fragments " << shape->describe() << ", subgroups of " << dev.info().subgroup_size);
    uint32_t seed = 3;
    if (dev.info().is_cpu() && std::string(cfg.name) != "khr_coopmat_64") {
      for (const Case& c : {k_khr_cases[0], k_khr_cases[3]})
        run_case(dev, cfg, DType::f16, c, seed += 10);
      continue;
    }
    run_tensor_core_cases(dev, cfg, seed);
  }
  if (!any_run) VKF_SKIP(dev.label() << ": " << not_run);
  if (!not_run.empty()) WARN(dev.label() << ": " << not_run);
}

// An f16 matmul with no row forced takes the KHR kernel where the device lists a fitting shape
// and is a GPU (MatmulArgs::config = nullptr: what the model's f16 paths will run).
VKF_TEST_CASE("matmul: f16 on a GPU with KHR cooperative matrices chooses them",
              "[shaders][matmul][coopmat][khr]") {
  Device& dev = test::device();
  const DeviceInfo& info = dev.info();
  const ops::MatmulConfig& big = ops::choose_matmul_config(info, true, DType::f16, 4096, 4096);
  const ops::MatmulConfig& small = ops::choose_matmul_config(info, true, DType::f16, 8, 512);
  const bool khr = ops::matmul_coopmat_khr_built() && !info.is_cpu() &&
                   ops::matmul_config_fits(ops::matmul_config("khr_coopmat_64"), info);
  CHECK(big.khr == khr);
  CHECK(small.khr == khr);
  if (khr) CHECK(std::string(small.name) == "khr_coopmat_64");
  CHECK(!ops::choose_matmul_config(info, true, DType::f32, 4096, 4096).coopmat);
  if (!test::has_storage16()) return;  // the chosen rows' f16 cases need 16-bit storage
  uint32_t seed = 51;
  for (const Case& c : k_khr_cases)
    run_case(dev, ops::choose_matmul_config(info, c.trans_b, DType::f16, c.m, c.n), DType::f16, c,
             seed += 10);
}

// The VK_NV_cooperative_matrix2 rows on the device's own workgroup-scope matrices: on a GPU whose
// driver has workgroup scope and tensor addressing (NVIDIA's). Mesa 26.1's lavapipe lists the
// extension without either, so on the CPU tiers the case names why it did not run. Every case of
// the other coopmat rows, then the KHR rows' own (tiles whole and partial, k not a multiple of
// the tile's, each transpose, every epilogue, beta, batches, padding), and the unrolled k loop
// of its unclamped path.
VKF_TEST_CASE("matmul: the NV coopmat2 rows match the reference (f16)",
              "[shaders][matmul][coopmat][nv2]") {
  Device& dev = test::device();
  std::string not_run;
  bool any_run = false;
  for (const ops::MatmulConfig& cfg : ops::matmul_configs()) {
    if (!cfg.nv2) continue;
    if (shaders::find(cfg.coopmat_kernel()).empty())
      VKF_SKIP("coopmat2 rows not run: this build has no " << cfg.coopmat_kernel()
                                                           << " kernel (glslc lacked "
                                                              "GL_NV_cooperative_matrix2)");
    if (const std::string why = ops::matmul_config_misfit(cfg, dev.info()); !why.empty()) {
      not_run += "row " + cfg.name + " not run: " + why + "; ";
      continue;
    }
    any_run = true;
    uint32_t seed = 7;
    run_tensor_core_cases(dev, cfg, seed);
    for (const Case& c : k_nv2_unrolled_cases) run_case(dev, cfg, DType::f16, c, seed += 10);
  }
  if (!any_run) VKF_SKIP(dev.label() << ": " << not_run);
  if (!not_run.empty()) WARN(dev.label() << ": " << not_run);
}

// The coopmat kernel with its fragment operations emulated (shaders/common/coopmat_fragment.glsl):
// the same staging, zero fill, transposes, scratch and epilogue as on tensor cores, so a fault in
// any of them fails here, on every device, and not only where VK_NV_cooperative_matrix exists.
// Each case is its own pipeline, and llvmpipe takes 3 s to compile one of the 64x64 row, 7-8 s
// one of the 128x128 row: the 64x64 row runs every case, the 128x128 row (the same code with
// larger loop counts) the coopmat cases and the extra cases' edges (1x1x1, k = 1, B broadcast).
// Returns "" when the row ran, else why the device cannot hold it.
std::string run_emulated_coopmat_row(const char* row, std::vector<Case> cases) {
  INFO("row " << row);
  Device& dev = test::device();
  const ops::MatmulConfig& cfg = ops::matmul_config(row);
  REQUIRE(cfg.coopmat);
  if (std::string why = ops::matmul_config_misfit(cfg, dev.info(), true); !why.empty())
    return "row " + std::string(row) + " not run emulated: " + dev.label() + ": " + why;
  uint32_t seed = 7;
  for (const Case& c : cases) run_case(dev, cfg, DType::f16, c, seed += 10, true);
  return "";
}

void check_emulated_coopmat_row(const char* row, std::vector<Case> cases) {
  if (const std::string why = run_emulated_coopmat_row(row, std::move(cases)); !why.empty())
    VKF_SKIP(why);
}

VKF_TEST_CASE(
    "matmul: the 64x64 coopmat row's kernel with emulated fragments matches the reference",
    "[shaders][matmul][coopmat]") {
  std::vector<Case> cases(std::begin(k_cases), std::end(k_cases));
  cases.insert(cases.end(), std::begin(k_extra_cases), std::end(k_extra_cases));
  cases.insert(cases.end(), std::begin(k_coopmat_cases), std::end(k_coopmat_cases));
  check_emulated_coopmat_row("nvidia_coopmat", cases);
}

VKF_TEST_CASE(
    "matmul: the 128x128 coopmat row's kernel with emulated fragments matches the reference",
    "[shaders][matmul][coopmat]") {
  std::vector<Case> cases(std::begin(k_coopmat_cases), std::end(k_coopmat_cases));
  cases.push_back(k_extra_cases[0]);  // 1x1x1
  cases.push_back(k_extra_cases[3]);  // k = 1, residual
  cases.push_back(k_cases[2]);        // B broadcast over the batch
  check_emulated_coopmat_row("nvidia_coopmat_128", cases);
}

// The KHR kernel with emulated 16x16x16 fragments (shaders/common/coopmat_khr_fragment.glsl):
// its staging in 16-byte runs, prefetch, zero fill, transposes, scratch and 16-byte epilogue,
// on every device. Compiling the emulated 128x128 and 128x256 kernels takes llvmpipe long, so
// the 64x64 row runs every case, the larger ones the KHR cases and two edges, with k = 264 (9
// steps) instead of 520: llvmpipe stops an invocation after 65535 loop iterations (its guard
// against endless loops), which 17 steps of a subgroup's 16 emulated fragment products pass.
VKF_TEST_CASE("matmul: the KHR rows' kernel with emulated fragments matches the reference",
              "[shaders][matmul][coopmat][khr]") {
  std::vector<Case> cases(std::begin(k_cases), std::end(k_cases));
  cases.insert(cases.end(), std::begin(k_extra_cases), std::end(k_extra_cases));
  cases.insert(cases.end(), std::begin(k_coopmat_cases), std::end(k_coopmat_cases));
  cases.insert(cases.end(), std::begin(k_khr_cases), std::end(k_khr_cases));
  cases.insert(cases.end(), std::begin(k_split_cases), std::end(k_split_cases));
  check_emulated_coopmat_row("khr_coopmat_64", cases);
  std::vector<Case> large(std::begin(k_khr_cases), std::end(k_khr_cases));
  large.back().k = 264;
  large.push_back(k_extra_cases[0]);  // 1x1x1
  large.push_back(k_cases[2]);        // B broadcast over the batch
  // Every row the device can hold runs; the others (khr_coopmat_2stage's 40 KiB of shared
  // memory on lavapipe's 32) are named, and do not stop the rows after them.
  for (const char* row : {"khr_coopmat", "khr_coopmat_256", "khr_coopmat_64_k64",
                          "khr_coopmat_2stage", "khr_coopmat_64_2stage"})
    if (const std::string why = run_emulated_coopmat_row(row, large); !why.empty()) WARN(why);
}

// The benchmarks' diagnostic bits (MatmulArgs::khr_diagnostic) drop the k-loop's global reads,
// or its barriers and staging: every k-step then multiplies the first step's tiles, so C is
// (k / BK) times the product over k < BK. On the emulated twin, so it runs everywhere.
VKF_TEST_CASE("matmul: the KHR kernel's diagnostic bits multiply the first k-step every step",
              "[shaders][matmul][coopmat][khr]") {
  Device& dev = test::device();
  const ops::MatmulConfig& cfg = ops::matmul_config("khr_coopmat_64");
  if (const std::string why = ops::matmul_config_misfit(cfg, dev.info(), true); !why.empty())
    VKF_SKIP("not run emulated: " << dev.label() << ": " << why);
  const uint32_t steps = 3, m = 50, n = 40, k = steps * cfg.bk;  // A B^T, edges in m and n
  const auto a = stored(test::random_floats(uint64_t(m) * k, 5), DType::f16);
  const auto b = stored(test::random_floats(uint64_t(n) * k, 6), DType::f16);
  // Bits 1-3: every k-step multiplies the first step's tiles (steps times their product). Bit 4:
  // every fragment product multiplies the first fragments, k / fragment_k times.
  auto reference = [&](uint32_t depth, double times, std::vector<double>& want,
                       std::vector<double>& scale) {
    want.assign(uint64_t(m) * n, 0.0), scale.assign(uint64_t(m) * n, 0.0);
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t j = 0; j < n; ++j)
        for (uint32_t q = 0; q < depth; ++q) {
          const double t = double(a[uint64_t(i) * k + q]) * b[uint64_t(j) * k + q];
          want[uint64_t(i) * n + j] += times * t;
          scale[uint64_t(i) * n + j] += times * std::fabs(t);
        }
  };
  Buffer ba = dev.allocate(a.size() * 2, "A"), bb = dev.allocate(b.size() * 2, "B");
  Buffer bc = dev.allocate(uint64_t(m) * n * 2, "C");
  upload(dev, ba, a, DType::f16);
  upload(dev, bb, b, DType::f16);
  // The emulated twin everywhere, the real kernel where the device and build run it; with one
  // staging buffer and with two (the same tiles).
  for (const char* row : {"khr_coopmat_64", "khr_coopmat_64_2stage"})
    for (const bool emulated : {true, false})
      for (uint32_t bits = 1; bits <= 7; ++bits) {
        const ops::MatmulConfig& row_cfg = ops::matmul_config(row);
        REQUIRE(row_cfg.bk == cfg.bk);
        const bool real =
            ops::matmul_coopmat_khr_built() && ops::matmul_config_fits(row_cfg, dev.info());
        if (!emulated && !real) continue;
        // The emulated twin's fragments are 16 deep; the real kernel's, the shape it runs on.
        const uint32_t fragment_k = emulated ? 16 : ops::khr_coopmat_shape(row_cfg, dev.info())->k;
        std::vector<double> want, scale;
        if (bits & 4)
          reference(fragment_k, double(k / fragment_k), want, scale);
        else
          reference(cfg.bk, steps, want, scale);
        INFO(row << ", diagnostic " << bits
                 << (emulated ? ", emulated fragments" : ", KHR fragments"));
        upload(dev, bc, std::vector<float>(uint64_t(m) * n, -65504.0f), DType::f16);
        ops::MatmulArgs args;
        args.a = ba, args.b = bb, args.c = bc;
        args.m = m, args.n = n, args.k = k, args.trans_b = true;
        args.dtype = DType::f16;
        args.config = &row_cfg;
        args.emulate_coopmat = emulated;
        args.khr_diagnostic = bits;
        Recorder rec(dev);
        ops::matmul(dev, rec, args);
        rec.finish().run();
        const auto got = download(dev, bc, uint64_t(m) * n, DType::f16);
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i)
          worst = std::max(worst, std::fabs(got[i] - want[i]) / (1e-6 + 2e-3 * scale[i]));
        CHECK(worst <= 1.0);
      }
  ops::MatmulArgs args;
  args.a = ba, args.b = bb, args.c = bc;
  args.m = m, args.n = n, args.k = k, args.trans_b = true, args.dtype = DType::f16;
  args.khr_diagnostic = 1;
  args.config = &ops::matmul_config("fallback");
  Recorder rec(dev);
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("applies to KHR rows"));
  args.config = &cfg;
  args.khr_diagnostic = 8;
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("applies to KHR rows"));
}

VKF_TEST_CASE("matmul uses the device's row unless forced", "[shaders][matmul]") {
  Device& dev = test::device();
  const ops::MatmulConfig& chosen = ops::choose_matmul_config(dev.info());
  CHECK(ops::matmul_config_fits(chosen, dev.info()));
  if (dev.info().is_cpu())
    CHECK(std::string(chosen.name) ==
          (dev.info().subgroup_size == 16 ? "cpu_direct16" : "cpu_direct"));
  // The default (table choice) path, and more shapes on it.
  uint32_t seed = 99;
  for (const Case& c : k_extra_cases)
    run_case(dev, ops::choose_matmul_config(dev.info(), c.trans_b), DType::f32, c, seed += 10);
}

// The harness itself (reference/matmul_case.h), so that no case above passes vacuously: an output
// the kernel did not write (still poison) fails, and so does one element overwritten after the
// kernel (the test hooks' corruption), in the whole comparison and in the sampled rows the bench
// compares, also where C is cut into row blocks.
VKF_TEST_CASE("the matmul harness fails an unwritten or a corrupted output", "[shaders][matmul]") {
  Device& dev = test::device();
  const ops::MatmulConfig& cfg = ops::choose_matmul_config(dev.info());
  for (const uint32_t block_rows : {0u, 16u}) {
    Case c{65, 127, 33, 1, false, false, block_rows ? 0u : 3u, 1.0f, 0.0f, ops::Epilogue::bias};
    c.config = &cfg;
    c.block_rows = block_rows;
    c.guard = block_rows ? 0 : k_guard;
    INFO(c.describe() << ", blocks of " << block_rows << " rows");
    std::mt19937 rng(5);
    const ref::MatmulRun run(dev, c, rng);
    const ref::Tolerance tol = ref::matmul_tolerance(c.dtype);
    if (!block_rows) CHECK(!run.compare(tol).ok());
    CHECK(!run.compare_rows({0, 17, 64}, tol).ok());
    for (const uint32_t corrupt : {ref::k_wrong_bits, 0u}) {
      Recorder rec(dev);
      run.record(rec, corrupt);
      rec.finish().run();
      if (!block_rows) CHECK(run.compare(tol).ok() == !corrupt);
      CHECK(run.compare_rows({0, 17, 64}, tol).ok() == !corrupt);
      CHECK(run.compare_rows({17, 64}, tol).ok());  // the corruption is in row 0 only
    }
  }
}

// With a workspace and no split forced, a matmul of one tile and a long k (a small model's weight
// gradient) is split where the device has more than one compute unit, and still right.
VKF_TEST_CASE("matmul: split-k is chosen where the device has idle units", "[shaders][matmul]") {
  Device& dev = test::device();
  const Case grad{32, 64, 4500, 1, true, false, 0, 1.0f, 1.0f, ops::Epilogue::none, false, 0};
  for (DType t : {DType::f32, DType::f16}) {
    if (t == DType::f16 && !dev.info().storage16) continue;
    const ops::MatmulConfig& row =
        ops::choose_matmul_config(dev.info(), grad.trans_b, t, grad.m, grad.n);
    ops::MatmulArgs args;
    args.m = grad.m, args.n = grad.n, args.k = grad.k, args.trans_a = true, args.dtype = t;
    args.config = &row;
    INFO(dev.label() << ": " << dev.info().compute_units << " compute units, row " << row.name);
    if (dev.info().compute_units >= 2) CHECK(ops::matmul_split_k(dev, args, true).slices >= 2);
    run_case(dev, row, t, grad, 77);
  }
}

// The split's arithmetic on devices this machine does not have.
TEST_CASE("matmul split-k: slices fill the compute units, within the workspace",
          "[shaders][matmul]") {
  DeviceInfo gpu = test::fake_nvidia_info();
  gpu.compute_units = 132;
  const ops::MatmulConfig& row = ops::matmul_config("nvidia");  // 128 x 128 tiles
  ops::MatmulArgs w;  // a base model's attention weight gradient over 4096 tokens
  w.m = 512, w.n = 512, w.k = 4096, w.trans_a = true, w.beta = 1.0f;
  // 16 tiles on 132 units: 8 slices of 512.
  ops::SplitK plan = ops::plan_matmul_split_k(gpu, w, row, UINT64_MAX);
  CHECK(plan.slices == 8);
  CHECK(plan.slice_k == 512);
  CHECK(plan.partial_stride == 512 * 512);
  CHECK(plan.workspace_bytes == 8ull * 512 * 512 * 4);
  // As many as the workspace holds: 3 (1408 deep: whole runs of 64 fp32, 256 bytes).
  plan = ops::plan_matmul_split_k(gpu, w, row, 3ull * 512 * 512 * 4 + 100);
  CHECK(plan.slices == 3);
  CHECK(plan.slice_k == 1408);
  CHECK(ops::plan_matmul_split_k(gpu, w, row, 512 * 512 * 4).slices == 1);
  CHECK(ops::plan_matmul_split_k(gpu, w, row, 0).slices == 1);
  // f16: runs of 128 halves; partial products 64 floats (256 bytes) apart.
  ops::MatmulArgs h = w;
  h.dtype = DType::f16;
  h.m = 1, h.n = 2000, h.k = 5000;  // a bias gradient: 16 tiles, 8 slices (the last 520 deep)
  plan = ops::plan_matmul_split_k(gpu, h, row, UINT64_MAX);
  CHECK(plan.slices == 8);
  CHECK(plan.slice_k == 640);
  CHECK(plan.partial_stride == 2048);
  // A one-tile gradient (the tiny preset's 64 x 64): at most 16 slices, none under 256 deep
  // (2100 / 256 = 8, 7 once rounded to runs of 64), and none under 16 Mi flops (2 m n k).
  ops::MatmulArgs tiny = w;
  tiny.m = tiny.n = 64;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 16);
  tiny.k = 2100;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 7);
  tiny.k = 2000;  // 16.4 million flops
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 1);
  tiny.k = 500;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 1);
  // Tiles enough for half the units or more: no split (fc1's 4096 x 2048 output).
  ops::MatmulArgs fc1 = w;
  fc1.m = 4096, fc1.n = 2048, fc1.k = 512;
  CHECK(ops::plan_matmul_split_k(gpu, fc1, row, UINT64_MAX).slices == 1);
  fc1.m = 1024, fc1.n = 1024, fc1.k = 8192;  // 64 tiles: 2 slices
  CHECK(ops::plan_matmul_split_k(gpu, fc1, row, UINT64_MAX).slices == 2);
  // A decoder step of the base model, beam 4 x 32 sentences (128 rows, y = x W^T, the
  // decoder's workspace): fc2's 4 tiles take 8 slices of 256, the attention projections' and
  // fc1's k of 512 two, the vocabulary projection's 290 tiles none.
  ops::MatmulArgs step;
  step.m = 128, step.n = 512, step.k = 2048, step.trans_b = true;
  plan = ops::plan_matmul_split_k(gpu, step, row, UINT64_MAX);
  CHECK(plan.slices == 8);
  CHECK(plan.slice_k == 256);
  step.k = 512;
  CHECK(ops::plan_matmul_split_k(gpu, step, row, UINT64_MAX).slices == 2);
  step.n = 2048;
  CHECK(ops::plan_matmul_split_k(gpu, step, row, UINT64_MAX).slices == 2);
  step.n = 37000;
  CHECK(ops::plan_matmul_split_k(gpu, step, row, UINT64_MAX).slices == 1);
  // Where the driver does not say: 16 units assumed.
  gpu.compute_units = 0;
  CHECK(ops::plan_matmul_split_k(gpu, w, row, UINT64_MAX).slices == 1);
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 1);
  tiny.k = 4096;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 16);
  gpu.compute_units = 132;
  // Never automatically at batch > 1, nor on VK_NV_cooperative_matrix rows, nor when asked not to.
  ops::MatmulArgs batched = w;
  batched.batch = 2;
  CHECK(ops::plan_matmul_split_k(gpu, batched, row, UINT64_MAX).slices == 1);
  CHECK(ops::plan_matmul_split_k(gpu, h, ops::matmul_config("nvidia_coopmat"), UINT64_MAX).slices ==
        1);
  ops::MatmulArgs never = w;
  never.split_k = 1;
  CHECK(ops::plan_matmul_split_k(gpu, never, row, UINT64_MAX).slices == 1);
  // Forced: at most the slices asked for; an error where they cannot run.
  ops::MatmulArgs forced = fc1;
  forced.split_k = 5;
  CHECK(ops::plan_matmul_split_k(gpu, forced, row, UINT64_MAX).slices == 5);
  CHECK_THROWS_WITH(ops::plan_matmul_split_k(gpu, forced, row, 1000),
                    Catch::Contains("bytes of workspace"));
  batched.split_k = 2;
  CHECK_THROWS_WITH(ops::plan_matmul_split_k(gpu, batched, row, UINT64_MAX),
                    Catch::Contains("batch 1"));
  h.split_k = 2;
  CHECK_THROWS_WITH(
      ops::plan_matmul_split_k(gpu, h, ops::matmul_config("nvidia_coopmat"), UINT64_MAX),
      Catch::Contains("fp32 partial products"));
  forced.k = 60;  // one run of 64 floats
  CHECK_THROWS_WITH(ops::plan_matmul_split_k(gpu, forced, row, UINT64_MAX),
                    Catch::Contains("too short"));
}

// A tuned split (MatmulConfig::split_k, the tuner's measurement) replaces the rule, within
// what k and the workspace allow; a forced one and the device option still come first.
TEST_CASE("matmul split-k: a tuned count replaces the rule", "[shaders][matmul][tune]") {
  DeviceInfo gpu = test::fake_nvidia_info();
  gpu.compute_units = 132;
  ops::MatmulConfig row = ops::matmul_config("nvidia");  // 128 x 128 tiles
  ops::MatmulArgs fc1;  // 4096 x 2048: tiles for more than half the units, the rule keeps it whole
  fc1.m = 4096, fc1.n = 2048, fc1.k = 2048, fc1.trans_a = true;
  REQUIRE(ops::plan_matmul_split_k(gpu, fc1, row, UINT64_MAX).slices == 1);
  row.split_k = 4;
  ops::SplitK plan = ops::plan_matmul_split_k(gpu, fc1, row, UINT64_MAX);
  CHECK(plan.slices == 4);
  CHECK(plan.slice_k == 512);
  // No flops bound either: the tuner timed it (the rule leaves 2 x 64 x 64 x 2000 whole).
  ops::MatmulArgs tiny = fc1;
  tiny.m = tiny.n = 64, tiny.k = 2000;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 4);
  // Fewer where the workspace holds fewer, none where it holds one; never an error.
  CHECK(ops::plan_matmul_split_k(gpu, fc1, row, 3ull * 4096 * 2048 * 4).slices == 3);
  CHECK(ops::plan_matmul_split_k(gpu, fc1, row, 4096ull * 2048 * 4).slices == 1);
  tiny.k = 64;  // one run of 64 floats
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 1);
  // 1: never, where the rule would split (a one-tile gradient).
  row.split_k = 1;
  tiny.k = 4096;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 1);
  row.split_k.reset();
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 16);
  // A forced count comes before the tuned one.
  row.split_k = 4;
  tiny.split_k = 2;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, row, UINT64_MAX).slices == 2);
  // A kernel that cannot store fp32 partials ignores it.
  ops::MatmulConfig v1 = ops::matmul_config("nvidia_coopmat");
  v1.split_k = 4;
  tiny.split_k.reset();
  tiny.dtype = DType::f16;
  CHECK(ops::plan_matmul_split_k(gpu, tiny, v1, UINT64_MAX).slices == 1);
  CHECK(row.describe().find(" split4") != std::string::npos);
  row.split_k = 1;
  CHECK(row.describe().find(" unsplit") != std::string::npos);
}

TEST_CASE("matmul tuning table: rows are consistent and the fallback fits any device",
          "[shaders][matmul]") {
  for (const ops::MatmulConfig& cfg : ops::matmul_configs()) {
    INFO(cfg.name);
    CHECK(cfg.bm % cfg.tm == 0);
    CHECK(cfg.bn % cfg.tn == 0);
    if (cfg.nv2) {
      // The workgroup owns the whole tile (tm x tn is bm x bn); the driver splits it.
      CHECK(cfg.coopmat);
      CHECK(!cfg.khr);
      CHECK(cfg.stages == 1);
      CHECK(cfg.tm == cfg.bm);
      CHECK(cfg.tn == cfg.bn);
      CHECK(cfg.bk % 16 == 0);
      CHECK(cfg.shared_bytes() == 0);
      continue;
    }
    if (cfg.coopmat) {
      // One subgroup per tm x tn block of 16x16 fragments; k in 16-deep fragments.
      CHECK(cfg.shared);
      CHECK(cfg.tm % 16 == 0);
      CHECK(cfg.tn % 16 == 0);
      CHECK(cfg.bk % 16 == 0);
      CHECK(cfg.workgroup % cfg.subgroups() == 0);
      // Each coopmat row has its own emulated-fragments test case above.
      const std::string name = cfg.name;
      CHECK((cfg.stages == 1 || (cfg.khr && cfg.stages == 2)));
      if (cfg.khr)
        CHECK((name == "khr_coopmat" || name == "khr_coopmat_64" || name == "khr_coopmat_64_k64" ||
               name == "khr_coopmat_256" || name == "khr_coopmat_2stage" ||
               name == "khr_coopmat_64_2stage"));
      else
        CHECK((name == "nvidia_coopmat" || name == "nvidia_coopmat_128"));
      continue;
    }
    CHECK((cfg.bm / cfg.tm) * (cfg.bn / cfg.tn) == cfg.workgroup);
    if (!cfg.shared) {
      CHECK(cfg.bm == cfg.tm);
      CHECK(cfg.tm % cfg.workgroup == 0);
    }
  }
  // Vulkan's required minimums: 128 invocations, 16 KiB of shared memory.
  DeviceInfo tiny;
  tiny.vendor = Vendor::nvidia;
  tiny.max_workgroup_invocations = 128;
  tiny.max_workgroup_size = {128, 128, 64};
  tiny.shared_memory_bytes = 16384;
  CHECK(std::string(ops::choose_matmul_config(tiny).name) == "fallback");
  CHECK(ops::matmul_config_fits(ops::matmul_config("fallback"), tiny));
  // A CPU device without subgroup shuffles cannot take the direct row.
  DeviceInfo cpu = tiny;
  cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  cpu.subgroup_size = cpu.min_subgroup_size = cpu.max_subgroup_size = 8;
  cpu.subgroup_shuffle = false;
  CHECK(std::string(ops::choose_matmul_config(cpu).name) == "fallback");
  cpu.subgroup_shuffle = true;
  CHECK(std::string(ops::choose_matmul_config(cpu).name) == "cpu_direct");
  cpu.subgroup_size = cpu.min_subgroup_size = cpu.max_subgroup_size = 16;
  CHECK(std::string(ops::choose_matmul_config(cpu).name) == "cpu_direct16");
  CHECK(std::string(ops::choose_matmul_config(cpu, false).name) == "cpu_direct16_nn");
  cpu.subgroup_size = cpu.min_subgroup_size = cpu.max_subgroup_size = 4;  // SwiftShader-like
  CHECK(std::string(ops::choose_matmul_config(cpu).name) == "fallback");
  CHECK_THROWS_WITH(ops::matmul_config("nope"), Catch::Contains("fallback"));

  // An NVIDIA GPU with every feature the NV v1 coopmat row needs still gets the plain row: on an
  // H100 that row ran 0.64-0.87x the plain f16 one (the tuner times it; docs/performance.md).
  const DeviceInfo nv = test::fake_nvidia_info();
  const ops::MatmulConfig& coop = ops::matmul_config("nvidia_coopmat");
  CHECK(ops::matmul_config_fits(coop, nv));
  CHECK(std::string(ops::choose_matmul_config(nv).name) == "nvidia");
  CHECK(std::string(ops::choose_matmul_config(nv, false).name) == "nvidia");
  DeviceInfo no_shape = nv;
  no_shape.nv_coopmat_f16_16x16x16 = false;
  CHECK_THAT(ops::matmul_config_misfit(coop, no_shape), Catch::Contains("16x16x16"));
  DeviceInfo wave64 = nv;  // 128 invocations are not 4 subgroups of 64
  wave64.subgroup_size = wave64.min_subgroup_size = wave64.max_subgroup_size = 64;
  CHECK_THAT(ops::matmul_config_misfit(coop, wave64), Catch::Contains("subgroups of 64"));
  DeviceInfo no_vmm = nv;
  no_vmm.vulkan_memory_model = false;
  CHECK(!ops::matmul_config_fits(coop, no_vmm));

  // VK_KHR_cooperative_matrix: f16 matmuls on a GPU that lists an fp16 x fp16 + fp32 subgroup
  // shape take a KHR row (where this build has the kernel), the large one where m x n fills at
  // least 128 of its tiles; f32 and CPU devices do not.
  const auto shape = [](uint32_t m, uint32_t n, uint32_t k, uint32_t c_type) {
    return CoopmatShape{m, n, k, 0, 0, c_type, c_type, false, 3};  // f16 A, B; subgroup scope
  };
  DeviceInfo khr = nv;
  khr.nv_coopmat = khr.nv_coopmat_f16_16x16x16 = false;
  khr.khr_coopmat = true;
  khr.khr_coopmat_shapes = {shape(16, 16, 16, 0), shape(16, 8, 16, 1), shape(16, 16, 16, 1)};
  const ops::MatmulConfig& khr_row = ops::matmul_config("khr_coopmat");
  REQUIRE(ops::khr_coopmat_shape(khr_row, khr) != nullptr);
  CHECK(ops::khr_coopmat_shape(khr_row, khr)->describe() == "16x16x16 f16*f16+f32->f32");
  CHECK(ops::matmul_config_fits(khr_row, khr));
  CHECK(khr_row.invocations(khr) == 128);
  CHECK(khr_row.invocations(khr, true) == 128);
  const bool built = ops::matmul_coopmat_khr_built();
  CHECK(std::string(ops::choose_matmul_config(khr, true, DType::f16, 4096, 2048).name) ==
        (built ? "khr_coopmat" : "nvidia"));
  // A decoder step's FFN (64 rows, 2048 columns: 16 large tiles) takes the small tiles; its
  // vocabulary projection (64 x 37000: 290 large tiles) fills the GPU with the large ones.
  CHECK(std::string(ops::choose_matmul_config(khr, true, DType::f16, 64, 2048).name) ==
        (built ? "khr_coopmat_64" : "nvidia"));
  CHECK(std::string(ops::choose_matmul_config(khr, false, DType::f16, 64, 37000).name) ==
        (built ? "khr_coopmat" : "nvidia"));
  CHECK(std::string(ops::choose_matmul_config(khr, true, DType::f32, 4096, 2048).name) == "nvidia");
  DeviceInfo khr_cpu = khr;
  khr_cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  CHECK(!ops::choose_matmul_config(khr_cpu, true, DType::f16, 4096, 2048).coopmat);
  // An Intel-like 8x8x16 shape divides the tiles; a 16x16x16 one with fp16 accumulation, or
  // none at all, does not fit, and the reason lists what the device has.
  DeviceInfo intel = khr;
  intel.subgroup_size = intel.min_subgroup_size = intel.max_subgroup_size = 8;
  intel.khr_coopmat_shapes = {shape(8, 8, 16, 1)};
  CHECK(ops::matmul_config_fits(khr_row, intel));
  CHECK(khr_row.invocations(intel) == 32);
  DeviceInfo f16_acc = khr;
  f16_acc.khr_coopmat_shapes = {shape(16, 16, 16, 0)};
  CHECK_THAT(ops::matmul_config_misfit(khr_row, f16_acc),
             Catch::Contains("shape") && Catch::Contains("16x16x16 f16*f16+f16->f16"));
  CHECK(!ops::choose_matmul_config(f16_acc, true, DType::f16, 4096, 2048).coopmat);
  DeviceInfo no_khr = khr;
  no_khr.khr_coopmat = false;
  CHECK_THAT(ops::matmul_config_misfit(khr_row, no_khr),
             Catch::Contains("no VK_KHR_cooperative_matrix"));
  // A width that varies and cannot be pinned (the kernel gives each subgroup one block).
  DeviceInfo varies = khr;
  varies.min_subgroup_size = 32, varies.max_subgroup_size = 64;
  varies.subgroup_size_control = false;
  CHECK_THAT(ops::matmul_config_misfit(khr_row, varies), Catch::Contains("cannot be pinned"));
  varies.subgroup_size_control = true;
  CHECK(ops::matmul_config_fits(khr_row, varies));
  // Mesa 26.1's lavapipe crashes compiling the KHR kernel at subgroups of 16 (512 bits): refused
  // with the reason there; at 8 (256 bits), and on a later Mesa, it runs.
  DeviceInfo lavapipe = khr;
  lavapipe.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  lavapipe.driver_name = "llvmpipe";
  lavapipe.vendor = Vendor::mesa;
  lavapipe.driver_info = "Mesa 26.1.6-1~bpo13+1 (LLVM 19.1.7)";
  lavapipe.khr_coopmat_shapes = {shape(8, 8, 8, 1)};
  lavapipe.subgroup_size = lavapipe.min_subgroup_size = lavapipe.max_subgroup_size = 16;
  for (const char* row : {"khr_coopmat", "khr_coopmat_64", "khr_coopmat_64_k64", "khr_coopmat_256",
                          "khr_coopmat_2stage", "khr_coopmat_64_2stage"})
    CHECK_THAT(ops::matmul_config_misfit(ops::matmul_config(row), lavapipe),
               Catch::Contains("crashes compiling") && Catch::Contains("Mesa 26.1)"));
  DeviceInfo lavapipe_256 = lavapipe;
  lavapipe_256.subgroup_size = lavapipe_256.min_subgroup_size = lavapipe_256.max_subgroup_size = 8;
  CHECK(ops::matmul_config_fits(khr_row, lavapipe_256));
  DeviceInfo later_mesa = lavapipe;
  later_mesa.driver_info = "Mesa 26.2.0 (LLVM 20.1.0)";
  CHECK(ops::matmul_config_fits(khr_row, later_mesa));

  // VK_NV_cooperative_matrix2: an NVIDIA-like driver (every feature, fp16 x fp16 + fp32 at
  // workgroup scope for 128 and 256 invocations, granularity 16) runs every coopmat2 row, and
  // no table chooses one (the tuner times them). What is missing is named: Mesa 26.1's lavapipe
  // lists the extension without workgroup scope or tensor addressing.
  const DeviceInfo nv2 = test::with_fake_coopmat2(khr);
  const ops::MatmulConfig& nv2_row = ops::matmul_config("nv_coopmat2");
  for (const char* row : {"nv_coopmat2", "nv_coopmat2_256", "nv_coopmat2_64"})
    CHECK(ops::matmul_config_fits(ops::matmul_config(row), nv2));
  CHECK(nv2_row.describe() == "wg256 128x128x64 t128x128 nv_coopmat2");
  CHECK(std::string(ops::choose_matmul_config(nv2, true, DType::f16, 4096, 2048).name) ==
        (built ? "khr_coopmat" : "nvidia"));
  DeviceInfo mesa_nv2 = nv2;
  mesa_nv2.nv_coopmat2.workgroup_scope = mesa_nv2.nv_coopmat2.tensor_addressing = false;
  CHECK_THAT(ops::matmul_config_misfit(nv2_row, mesa_nv2),
             Catch::Contains("without workgroup scope, tensor addressing"));
  DeviceInfo vk12 = nv2;
  vk12.api_version = VK_API_VERSION_1_2;
  CHECK_THAT(ops::matmul_config_misfit(nv2_row, vk12), Catch::Contains("needs 1.3"));
  DeviceInfo only_256 = nv2;  // the 64x64 row runs 128 invocations: no shape listed for that
  std::erase_if(only_256.nv_coopmat2.flexible_shapes,
                [](const CoopmatShape& s) { return s.workgroup_invocations == 128; });
  CHECK(ops::matmul_config_fits(nv2_row, only_256));
  CHECK_THAT(ops::matmul_config_misfit(ops::matmul_config("nv_coopmat2_64"), only_256),
             Catch::Contains("fp32 C, result at workgroup scope for 128 invocations") &&
                 Catch::Contains("16x16x16 f16*f16+f32->f32 workgroup wg256"));
  DeviceInfo f32_only = nv2;  // no fp16 accumulator to convert the tile to before its store
  std::erase_if(f32_only.nv_coopmat2.flexible_shapes,
                [](const CoopmatShape& s) { return s.c_type == VK_COMPONENT_TYPE_FLOAT16_KHR; });
  CHECK_THAT(ops::matmul_config_misfit(nv2_row, f32_only), Catch::Contains("an fp16 C or result"));
  DeviceInfo small_dims = nv2;
  small_dims.nv_coopmat2.max_dimension = 128;
  CHECK_THAT(ops::matmul_config_misfit(ops::matmul_config("nv_coopmat2_256"), small_dims),
             Catch::Contains("limit of 128"));
  DeviceInfo no_nv2 = khr;
  CHECK_THAT(ops::matmul_config_misfit(nv2_row, no_nv2),
             Catch::Contains("no VK_NV_cooperative_matrix2"));
}

VKF_TEST_CASE("matmul checks its arguments", "[shaders][matmul]") {
  Device& dev = test::device();
  Buffer small = dev.allocate(64, "small"), big = dev.allocate(1 << 16, "big");
  Recorder rec(dev);
  ops::MatmulArgs args;
  args.a = big, args.b = big, args.c = small;
  args.m = 8, args.n = 8, args.k = 8;
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("operand C needs 256 bytes"));
  args.c = BufferRef(big).slice(0, 1024);
  args.a = BufferRef(big).slice(1024, 4096);
  args.lda = 4;
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("lda = 4"));
  args.lda.reset();
  args.epilogue = ops::Epilogue::bias;
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("bias is not bound"));

  // Texel views asked for where they cannot hold A: an offset off the alignment, or an A that
  // ends inside a texel.
  args.epilogue = ops::Epilogue::none;
  args.texel_views = true;
  const uint32_t align = uint32_t(dev.info().texel_buffer_alignment);
  REQUIRE(align >= 4);
  args.a = BufferRef(big).slice(1024 + align / 2, 256);
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("texel views asked for"));
  args.lda = 8;
  args.m = 7, args.k = 7;  // A spans 6 * 8 + 7 = 55 elements, 13.75 texels
  args.a = BufferRef(big).slice(1024, 55 * 4);
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("texel views asked for"));
  args.a = BufferRef(big).slice(1024, 4096);
  args.lda.reset();
  args.m = 8, args.k = 8;
  args.texel_views.reset();

  // A split-k workspace must not overlap the operands, nor be too small for a forced split.
  args.k = 512;
  args.a = BufferRef(big).slice(1024, 8 * 512 * 4);
  args.b = BufferRef(big).slice(1024 + 8 * 512 * 4, 8 * 512 * 4);
  args.split_k = 2;
  args.workspace = BufferRef(big).slice(0, 2 * 64 * 4);  // C's range
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("workspace overlaps"));
  args.workspace = BufferRef(big).slice(60000, 256);
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("bytes of workspace"));
  args.workspace = {};
  args.split_k.reset();
  args.a = BufferRef(big).slice(1024, 4096);
  args.b = big;
  args.k = 8;

  // Emulation is for coopmat rows only.
  args.emulate_coopmat = true;
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("applies to coopmat rows"));
  args.emulate_coopmat = false;
  // A forced coopmat row says why it cannot run: f32 storage always; f16 where the build or
  // the device lacks the path (lavapipe).
  args.config = &ops::matmul_config("nvidia_coopmat");
  CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("f16 storage only"));
  if (dev.info().storage16) {
    args.dtype = DType::f16;
    if (!ops::matmul_coopmat_built())
      CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("GL_NV_cooperative_matrix"));
    else if (!ops::matmul_config_fits(*args.config, dev.info()))
      CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("does not fit"));
    // The same for the KHR rows (Debian 12: not built; Debian 13's lavapipe: built and fits).
    args.config = &ops::matmul_config("khr_coopmat");
    if (!ops::matmul_coopmat_khr_built())
      CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("GL_KHR_cooperative_matrix"));
    else if (!ops::matmul_config_fits(*args.config, dev.info()))
      CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("does not fit"));
    // And the coopmat2 rows (not built on Debian 12; Mesa 26.1's lavapipe lacks workgroup
    // scope); none has an emulated twin.
    args.config = &ops::matmul_config("nv_coopmat2");
    if (shaders::find("matmul_coopmat_nv2").empty())
      CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("GL_NV_cooperative_matrix2"));
    else if (!ops::matmul_config_fits(*args.config, dev.info()))
      CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("does not fit"));
    args.emulate_coopmat = true;
    CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("has no emulated kernel"));
    args.emulate_coopmat = false;
    args.dtype = DType::f32;
    CHECK_THROWS_WITH(ops::matmul(dev, rec, args), Catch::Contains("f16 storage only"));
  }
}
