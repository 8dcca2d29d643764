// A device profile applied to a DeviceInfo (engine/device_profile.h), the kernel bindings a
// device's per-stage limits allow (engine/kernel.h) and default choices that must fit a
// profile's device: host code only, no device.
#include <algorithm>
#include <fstream>

#include "engine/device_profile.h"
#include "engine/error.h"
#include "engine/kernel.h"
#include "engine/ops/attention.h"
#include "engine/ops/topk_choice.h"
#include "engine/shader_bindings.h"
#include "engine/shader_registry.h"
#include "tests/support/fake_devices.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

const std::string k_profiles = std::string(VKF_SOURCE_DIR) + "/tests/profiles/";

}  // namespace

TEST_CASE("a device profile restricts a DeviceInfo and says where it claims more",
          "[engine][profile]") {
  DeviceInfo info = test::fake_nvidia_info();
  info.api_version = VK_API_VERSION_1_3;
  info.max_storage_buffer_range = 1ull << 32;
  info.max_stage_storage_buffers = info.max_stage_sampled_images = info.max_stage_resources = 1u
                                                                                              << 20;
  info.max_push_constant_bytes = 256;
  info.max_workgroup_count = {1u << 31, 65535, 65535};
  info.max_texel_buffer_elements = 1u << 27;
  info.max_allocation_bytes = 1ull << 32;
  info.min_storage_offset_alignment = 16;
  info.timestamp_valid_bits = 64;
  info.subgroup_arithmetic = info.subgroup_size_control = true;
  const ProfileApplied a = apply_device_profile(info, k_profiles + "vulkan_1_2_minimums.json");
  CHECK(a.name == "vulkan_1_2_minimums");
  CHECK(a.clamps.empty());
  CHECK(info.api_version == VK_API_VERSION_1_2);
  CHECK(info.shared_memory_bytes == 16384);
  CHECK(info.max_workgroup_invocations == 128);
  CHECK(info.max_storage_buffer_range == 134217728);
  CHECK(info.max_stage_storage_buffers == 4);
  CHECK(info.min_storage_offset_alignment == 256);
  CHECK(!info.fp16);
  CHECK(!info.storage16);
  CHECK(!info.subgroup_arithmetic);
  CHECK(!info.subgroup_shuffle);
  CHECK(!info.subgroup_size_control);
  CHECK(!info.nv_coopmat);
  CHECK(info.timestamp_valid_bits == 0);

  // A profile beyond the device: the device's value stays, and the clamp is reported.
  DeviceInfo small = test::fake_cpu_info(8);
  small.api_version = VK_API_VERSION_1_3;
  const ProfileApplied b = apply_device_profile(small, k_profiles + "nvidia_gtx_1060.json");
  CHECK(small.shared_memory_bytes == 32768);
  CHECK(small.max_workgroup_invocations == 1024);
  bool named = false;
  for (const auto& c : b.clamps) named = named || c.find("maxComputeSharedMemorySize") == 0;
  CHECK(named);
}

TEST_CASE("a device profile that cannot be read is refused by name", "[engine][profile]") {
  DeviceInfo info = test::fake_cpu_info(8);
  CHECK_THROWS_WITH(apply_device_profile(info, "/nonexistent/p.json"),
                    Catch::Contains("/nonexistent/p.json"));
  const auto dir = test::temp_dir("profile");
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << R"({"name": "x", "limits": {"maxComputeSharedMemorySize": "lots"}})";
  CHECK_THROWS_WITH(apply_device_profile(info, bad), Catch::Contains("bad.json"));
}

TEST_CASE("a kernel over a device's per-stage bindings is refused, naming the limit",
          "[engine][profile]") {
  const KernelSpec five{.name = "wide", .buffers = 5, .push_bytes = 16};
  KernelLimits four;
  four.storage_buffers = 4;
  CHECK_THAT(kernel_limits_misfit(five, four, "the device"),
             Catch::Contains("binds 5 storage buffers") &&
                 Catch::Contains("maxPerStageDescriptorStorageBuffers") &&
                 Catch::Contains("the device"));
  KernelLimits eight;
  eight.storage_buffers = 8;
  CHECK(kernel_limits_misfit(five, eight, "the device").empty());
  KernelLimits push;
  push.push_bytes = 8;
  CHECK_THAT(kernel_limits_misfit(five, push, "d"), Catch::Contains("maxPushConstantsSize"));
  // Texel buffers count against sampled images, not storage buffers.
  const KernelSpec texel{.name = "t", .buffers = 5, .texel_buffers = 0b11};
  CHECK(kernel_limits_misfit(texel, four, "d").empty());
}

TEST_CASE("the default choices fit a profile's device: top-k chunk, attention path",
          "[engine][profile]") {
  // 16 KiB of shared memory (VP_KHR_roadmap_2022): the default top-k chunk shrinks to fit.
  DeviceInfo small = test::fake_cpu_info(16);
  small.shared_memory_bytes = 16384;
  const ops::TopKProblem p{DType::f32, 4, 32000, 4};
  const ops::TopKChoice c = ops::choose_topk(small, nullptr, p);
  CHECK(ops::topk_config_misfit(small, c.config, p).empty());
  CHECK_THAT(c.why, Catch::Contains("smaller chunk"));
  // Without subgroup shuffles (basic operations only: VP_LUNARG_desktop_baseline_2023) the
  // attention rows path, which shuffles, is not the default even on a CPU device.
  DeviceInfo basic = test::fake_cpu_info(16);
  CHECK(ops::attention_default_tiles(basic, ops::AttentionKernel::forward, 64, 64).path ==
        ops::AttentionPath::rows);
  basic.subgroup_shuffle = false;
  CHECK(ops::attention_default_tiles(basic, ops::AttentionKernel::forward, 64, 64).path ==
        ops::AttentionPath::tiled);
}

TEST_CASE("a driver that compiles the rows kernels slowly gets the rows path's cheapest default",
          "[engine][profile]") {
  DeviceInfo info = test::fake_cpu_info(16);
  auto tiles = [&](uint32_t d) {
    return ops::attention_default_tiles(info, ops::AttentionKernel::backward_kv, d, d);
  };
  using Unroll = ops::AttentionTiles::Unroll;
  for (const char* fast : {"Mesa 22.3.6 (LLVM 15.0.6)", "Mesa 26.1.0 (LLVM 19.1.7)", ""}) {
    info.driver_info = fast;
    CHECK_FALSE(ops::slow_rows_compiler(info));
    CHECK(tiles(64).rows == 4);
    CHECK(tiles(128).rows == 2);
    CHECK(tiles(64).unroll == Unroll::unrolled);  // 16 lanes
  }
  // Mesa 25.0's lavapipe: minutes a kernel at d 64 with 4 rows a lane (engine/ops/attention.cpp).
  info.driver_info = "Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)";
  CHECK(info.mesa_major() == 25);
  CHECK(ops::slow_rows_compiler(info));
  CHECK(tiles(64).rows == 1);
  CHECK(tiles(128).rows == 1);
  CHECK(tiles(64).unroll == Unroll::rolled);
  CHECK(ops::attention_default_unroll(info) == Unroll::rolled);
  // Only a CPU device's Mesa (a GPU's Mesa driver compiles with its own backend), only "Mesa N.".
  info.type = VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
  CHECK_FALSE(ops::slow_rows_compiler(info));
  for (const char* other : {"Mesa25.0", "Mesa 25", "NVIDIA 25.0", "Mesa 123456.1"}) {
    info.driver_info = other;
    CHECK(info.mesa_major() == 0);
  }
}

TEST_CASE("the storage buffers a kernel binds are read from its SPIR-V", "[engine][profile]") {
  // Counted by hand from the shaders' layout declarations (aliased views of a binding once).
  CHECK(spirv_storage_buffers(shaders::find("attention_backward_kv")) == 11);
  CHECK(spirv_storage_buffers(shaders::find("attention_forward")) == 8);
  CHECK(spirv_storage_buffers(shaders::find("layer_norm_forward")) == 9);
  CHECK(spirv_storage_buffers(shaders::find("layer_norm_forward_texel")) == 5);  // + 4 texel views
  const std::vector<uint32_t> not_spirv = {1, 2, 3, 4, 5, 6};
  CHECK(spirv_storage_buffers(not_spirv) == 0);
  // The backward kernels' masks and step scalars through texel views: 8 and 7.
  CHECK(spirv_storage_buffers(shaders::find("attention_backward_kv_texel")) == 8);
  CHECK(spirv_storage_buffers(shaders::find("attention_backward_q_texel_f16")) == 7);
  CHECK(spirv_storage_buffers(shaders::find("attention_rows_backward_kv_unrolled_texel")) == 8);
  // A device of 8 a stage (the Raspberry Pi's V3DV) cannot bind attention's backward or
  // LayerNorm's forward, and takes their _texel twins.
  auto named = [](const std::vector<WideKernel>& wide, const std::string& name) {
    const auto it =
        std::find_if(wide.begin(), wide.end(), [&](const WideKernel& k) { return k.name == name; });
    return it == wide.end() ? WideKernel{} : *it;
  };
  const auto wide = kernels_over_storage_limit(8);
  REQUIRE(!wide.empty());
  CHECK(wide.front().storage_buffers == 11);
  CHECK(named(wide, "layer_norm_forward").texel_twin == "layer_norm_forward_texel");
  CHECK(named(wide, "attention_backward_kv_f16").texel_twin == "attention_backward_kv_texel_f16");
  CHECK(named(wide, "attention_rows_backward_q_unrolled").texel_twin ==
        "attention_rows_backward_q_unrolled_texel");
  // At Vulkan's minimum of 4 the twins do not fit either: refused.
  const auto narrow = kernels_over_storage_limit(4);
  CHECK(named(narrow, "attention_backward_kv").storage_buffers == 11);
  CHECK(named(narrow, "attention_backward_kv").texel_twin.empty());
  CHECK(kernels_over_storage_limit(200).empty());  // VP_KHR_roadmap_2022's minimum
}
