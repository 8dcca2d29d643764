// Host kernels: an application's own SPIR-V (tests/engine/host_kernels/scale_bias.comp, compiled
// by the test build) dispatched through the recorder with its push and specialization constants,
// in one sequence with built-in ops, its barriers derived like theirs and checked by
// synchronization validation; and the checks that refuse SPIR-V that does not fit its spec.
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/ops/basic.h"
#include "engine/ops/matmul_tuning.h"
#include "engine/vk_coopmat_khr.h"
#include "reference/stored.h"
#include "tests/support/f16_storage.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

const uint32_t k_scale_bias[] = {
#include "scale_bias.inc"
};

#ifdef VKF_TEST_HAVE_COOPMAT2
const uint32_t k_coopmat2_per_element[] = {
#include "coopmat2_per_element.inc"
};
#endif

struct ScaleBiasPush {
  uint32_t n;
  float scale;
};

// y = scale * x + bias; workgroup size and bias are specialization constants 0 and 1.
KernelSpec scale_bias_spec(uint32_t workgroup, float bias) {
  return {.name = "test_scale_bias",
          .buffers = 2,
          .push_bytes = sizeof(ScaleBiasPush),
          .spec = {workgroup, std::bit_cast<uint32_t>(bias)}};
}

const Kernel& scale_bias(Device& dev, uint32_t workgroup, float bias) {
  dev.add_shader("test_scale_bias", k_scale_bias);
  return dev.kernel(scale_bias_spec(workgroup, bias));
}

bool has_hazard(const std::vector<std::string>& messages) {
  for (const auto& m : messages)
    if (m.find("SYNC-HAZARD") != std::string::npos) return true;
  return false;
}

}  // namespace

VKF_TEST_CASE("a host kernel runs with its push and specialization constants",
              "[engine][host_kernel]") {
  Device& dev = test::device();
  for (auto [n, workgroup, bias] :
       {std::tuple{1u, 64u, 0.5f}, std::tuple{1000u, 64u, -2.0f}, std::tuple{4099u, 32u, 0.125f}}) {
    const auto x = test::random_floats(n, n);
    Buffer bx = dev.allocate(n * 4, "x"), by = dev.allocate(n * 4, "y");
    dev.upload(bx, x);
    dev.upload(by, std::vector<float>(n, test::k_poison));
    const float scale = -1.75f;
    Recorder rec(dev);
    rec.dispatch(scale_bias(dev, workgroup, bias), {in(bx), out(by)}, ScaleBiasPush{n, scale},
                 groups_1d(n, workgroup));
    rec.finish().run();
    const auto y = dev.download<float>(by, n);
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = double(scale) * x[i] + double(bias);
    CHECK(test::tolerance_ratio(y, want, 1e-6, 1e-6) <= 1.0);
  }
}

VKF_TEST_CASE("a host kernel and built-in ops share a sequence and its derived barriers",
              "[engine][host_kernel]") {
  REQUIRE(test::instance()->validation_enabled());
  Device& dev = test::device();
  const uint32_t n = 3001;
  Buffer x = dev.allocate(n * 4, "x"), y = dev.allocate(n * 4, "y"), z = dev.allocate(n * 4, "z");
  Buffer scalars = dev.allocate(16, "scalars", MemoryKind::host);
  reinterpret_cast<float*>(scalars.mapped())[0] = 2.0f;
  const Kernel& k = scale_bias(dev, 64, 1.0f);
  for (bool derive : {true, false}) {
    Recorder rec(dev, {.derive_barriers = derive});
    ops::fill(dev, rec, x, n, 3.0f);                                             // writes x
    rec.dispatch(k, {in(x), out(y)}, ScaleBiasPush{n, 0.5f}, groups_1d(n, 64));  // x -> y
    ops::fill(dev, rec, z, n, 1.0f);                                             // independent
    ops::axpy(dev, rec, y, z, scalars, 0, n);                                    // reads y
    if (derive) CHECK(rec.barrier_count() == 2);  // before the host kernel and before the axpy
    rec.finish().run();
    const auto messages = test::instance()->validation_log().take();
    CHECK(has_hazard(messages) == !derive);  // the barriers are needed, and enough
    if (derive) {
      const auto got = dev.download<float>(z, n);
      CHECK(got[0] == 1.0f + 2.0f * (0.5f * 3.0f + 1.0f));
      CHECK(got[n - 1] == got[0]);
    }
  }
}

VKF_TEST_CASE("host kernels that do not fit their spec are refused", "[engine][host_kernel]") {
  Device& dev = test::device();
  const std::vector<uint32_t> words(std::begin(k_scale_bias), std::end(k_scale_bias));
  CHECK_THROWS_WITH(dev.add_shader("fill", words), Catch::Contains("built-in shader"));
  std::vector<uint32_t> not_spirv = words;
  not_spirv[0] = 0x12345678;
  CHECK_THROWS_WITH(dev.add_shader("test_bad_magic", not_spirv), Catch::Contains("not SPIR-V"));
  // The header and the first word of OpCapability (two words long).
  CHECK_THROWS_WITH(dev.add_shader("test_truncated", std::span(words).first(6)),
                    Catch::Contains("truncated"));
  CHECK_THROWS_WITH(dev.add_shader("", words), Catch::Contains("needs a name"));
  dev.add_shader("test_scale_bias", words);
  dev.add_shader("test_scale_bias", words);  // the same words again: accepted
  std::vector<uint32_t> other = words;
  other[3] += 1;  // a larger id bound: harmless, but other SPIR-V under the same name
  CHECK_THROWS_WITH(dev.add_shader("test_scale_bias", other), Catch::Contains("other SPIR-V"));

  KernelSpec spec = scale_bias_spec(64, 0.0f);
  spec.buffers = 1;  // the shader binds 0 and 1
  CHECK_THROWS_WITH(dev.kernel(spec), Catch::Contains("binding 1 is beyond"));
  spec = scale_bias_spec(64, 0.0f);
  spec.push_bytes = 0;
  CHECK_THROWS_WITH(dev.kernel(spec), Catch::Contains("push constants"));
  spec = scale_bias_spec(64, 0.0f);
  spec.texel_buffers = 1;  // binding 0 is a storage buffer
  CHECK_THROWS_WITH(dev.kernel(spec), Catch::Contains("storage buffer"));
  spec = scale_bias_spec(64, 0.0f);
  spec.name = "test_never_added";
  CHECK_THROWS_WITH(dev.kernel(spec), Catch::Contains("add_shader"));
}

// A SPIR-V 1.6 kernel on VK_NV_cooperative_matrix2 (tests/engine/host_kernels/
// coopmat2_per_element.comp), where the driver has flexible dimensions and per-element
// operations (Mesa 26.1's lavapipe: the Debian 13 tier). What the engine's coopmat2 matmul
// shares with it is checked on a real driver under validation: the Vulkan 1.3 device, the
// extension and its features enabled, LocalSizeId, and the (row, col) the per-element operation
// is given, which the matmul's epilogue uses to find bias, residual and C. Tiles of sizes no KHR
// shape lists (flexible), rows padded, several tiles; the padding must stay poisoned.
VKF_TEST_CASE("a coopmat2 host kernel's per-element operation sees each element's row and column",
              "[engine][host_kernel][nv2]") {
#ifndef VKF_TEST_HAVE_COOPMAT2
  VKF_SKIP("not built: glslc lacks GL_NV_cooperative_matrix2 (Debian 13's glslc has it)");
#else
  Device& dev = test::device();
  const DeviceInfo& info = dev.info();
  const Coopmat2Info& nv2 = info.nv_coopmat2;
  if (!nv2.listed || !nv2.flexible_dimensions || !nv2.per_element_operations)
    VKF_SKIP(dev.label() << " has no VK_NV_cooperative_matrix2 with flexible dimensions and "
                            "per-element operations");
  if (info.api_version < VK_API_VERSION_1_3) VKF_SKIP(dev.label() << " is below Vulkan 1.3");
  if (!info.storage16 || !info.fp16) VKF_SKIP(dev.label() << " has no fp16 storage or arithmetic");
  // Mesa 26.1's lavapipe crashes compiling cooperative-matrix kernels at subgroups of 16.
  if (const std::string why = ops::known_khr_compiler_crash(info); !why.empty()) VKF_SKIP(why);
  dev.add_shader("test_coopmat2_per_element", k_coopmat2_per_element);
  struct Push {
    uint32_t ld;
    float alpha;
  };
  for (auto [rows, cols, tiles] :
       {std::tuple{16u, 24u, 3u}, std::tuple{8u, 8u, 1u}, std::tuple{32u, 16u, 2u}}) {
    // Both the fp32 tile and its fp16 copy need a listed subgroup-scope shape they divide.
    bool f32_tile = false, f16_tile = false;
    for (const CoopmatShape& s : nv2.flexible_shapes) {
      if (s.scope != VK_SCOPE_SUBGROUP_KHR || !s.m || !s.n || rows % s.m || cols % s.n) continue;
      f32_tile |= s.c_type == VK_COMPONENT_TYPE_FLOAT32_KHR;
      f16_tile |= s.c_type == VK_COMPONENT_TYPE_FLOAT16_KHR;
    }
    if (!f32_tile || !f16_tile) {
      WARN(dev.label() << ": no flexible fp32 and fp16 accumulator shapes for " << rows << "x"
                       << cols << ": not run");
      continue;
    }
    INFO(rows << "x" << cols << ", " << tiles << " tiles");
    const uint32_t ld = cols + 3, n = tiles * rows * ld;
    const float alpha = -1.5f;
    const auto x = test::random_floats(n, rows * 100 + cols);
    Buffer bx = dev.allocate(n * 4, "x");
    dev.upload(bx, x);
    const float poison = test::poison(DType::f16);
    Buffer by = ref::upload_stored(dev, std::vector<float>(n, poison), DType::f16, "y");
    KernelSpec spec{.name = "test_coopmat2_per_element",
                    .buffers = 2,
                    .push_bytes = sizeof(Push),
                    .spec = {info.subgroup_size, rows, cols}};
    if (info.min_subgroup_size != info.max_subgroup_size) spec.subgroup_size = info.subgroup_size;
    Recorder rec(dev);
    rec.dispatch(dev.kernel(spec), {in(bx), out(by)}, Push{ld, alpha}, {tiles, 1, 1});
    rec.finish().run();
    const auto y = ref::download_stored(dev, by, n, DType::f16);
    double worst = 0;
    for (uint32_t t = 0; t < tiles; ++t)
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t c = 0; c < ld; ++c) {
          const size_t i = (size_t(t) * rows + r) * ld + c;
          if (c >= cols) {
            CHECK(y[i] == poison);  // the padding is not the tile's
            continue;
          }
          const double want = double(alpha) * x[i] + r * 0.25 + c * 0.0625 + t;
          worst = std::max(worst, std::fabs(y[i] - want) / (1e-3 + 1e-3 * std::fabs(want)));
        }
    CHECK(worst <= 1.0);
  }
#endif
}
