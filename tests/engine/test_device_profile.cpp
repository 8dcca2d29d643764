// A device profile applied to a DeviceInfo (engine/device_profile.h), the kernel bindings a
// device's per-stage limits allow (engine/kernel.h) and default choices that must fit a
// profile's device: host code only, no device.
#include <fstream>

#include "engine/device_profile.h"
#include "engine/error.h"
#include "engine/kernel.h"
#include "engine/ops/attention.h"
#include "engine/ops/topk_choice.h"
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
