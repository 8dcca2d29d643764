#include <nlohmann/json.hpp>

#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("devices are enumerated with their capabilities", "[engine][device]") {
  // With the instance, so the cooperative-matrix shapes are queried too.
  auto infos = query_all_devices(test::instance()->physical_devices(), test::instance()->get());
  REQUIRE(!infos.empty());
  for (const auto& d : infos) {
    INFO(d.name);
    CHECK(!d.name.empty());
    CHECK((!d.nv_coopmat_f16_16x16x16 || d.nv_coopmat));
    // Shapes are listed only where the extension is usable, and each is a real shape.
    CHECK((d.khr_coopmat_shapes.empty() || d.khr_coopmat));
    for (const auto& s : d.khr_coopmat_shapes) CHECK((s.m > 0 && s.n > 0 && s.k > 0));
    CHECK(!d.heaps.empty());
    CHECK(d.subgroup_size > 0);
    CHECK(d.min_subgroup_size <= d.subgroup_size);
    CHECK(d.subgroup_size <= d.max_subgroup_size);
    CHECK(d.shared_memory_bytes >= 16384);  // the Vulkan minimum
  }
  auto json = nlohmann::json::parse(devices_json(infos));
  REQUIRE(json.size() == infos.size());
  CHECK(json[0].contains("subgroup_size_min"));
  CHECK(json[0].contains("cooperative_matrix_nv"));
  CHECK(json[0].contains("cooperative_matrix_nv_f16_16x16x16"));
  CHECK(json[0]["cooperative_matrix_khr_shapes"].size() == infos[0].khr_coopmat_shapes.size());
  CHECK(devices_table(infos).find(infos[0].name) != std::string::npos);
}

// VK_NV_cooperative_matrix2 reads as the driver lists it (Mesa 26.1's lavapipe, on the Debian 13
// tier: flexible dimensions with four shapes, no workgroup scope), and not at all elsewhere.
VKF_TEST_CASE("devices: VK_NV_cooperative_matrix2's features and shapes are read where listed",
              "[engine][device]") {
  auto infos = query_all_devices(test::instance()->physical_devices(), test::instance()->get());
  for (const auto& d : infos) {
    INFO(d.name << " " << d.driver_info);
    const Coopmat2Info& nv2 = d.nv_coopmat2;
    if (!nv2.listed) {
      CHECK(!nv2.workgroup_scope);
      CHECK(!nv2.flexible_dimensions);
      CHECK(nv2.flexible_shapes.empty());
      continue;
    }
    CHECK(d.khr_coopmat);  // the extension builds on the KHR one
    CHECK(nv2.flexible_dimensions == !nv2.flexible_shapes.empty());
    if (nv2.flexible_dimensions) CHECK(nv2.max_dimension > 0);
    for (const auto& s : nv2.flexible_shapes) {
      CHECK((s.m > 0 && s.n > 0 && s.k > 0));
      CHECK(s.describe().find("x") != std::string::npos);
    }
    if (nv2.workgroup_scope) CHECK(nv2.max_workgroup_size > 0);
    const auto json = nlohmann::json::parse(devices_json({d}));
    CHECK(json[0]["cooperative_matrix_nv2"]["flexible_shapes"].size() ==
          nv2.flexible_shapes.size());
    CHECK(devices_table({d}).find("NV cooperative matrix 2") != std::string::npos);
  }
}

VKF_TEST_CASE("device selection by index, vendor, type and name", "[engine][device]") {
  auto infos = query_all_devices(test::instance()->physical_devices());
  const DeviceInfo best = select_device(infos, "");
  // No device ranks above the one chosen by default.
  for (const auto& d : infos)
    if (best.type == VK_PHYSICAL_DEVICE_TYPE_CPU)
      CHECK(d.type != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU);
  CHECK(select_device(infos, "0").index == 0);
  CHECK(select_device(infos, infos[0].vendor_name()).vendor == infos[0].vendor);
  CHECK(select_device(infos, infos[0].type_name()).type == infos[0].type);
  std::string part = infos[0].name.substr(0, 4);
  for (auto& c : part) c = static_cast<char>(std::toupper(c));  // case-insensitive
  CHECK(select_device(infos, part).index == infos[0].index);
}

VKF_TEST_CASE("an unknown selector is an error that lists the devices", "[engine][device]") {
  auto infos = query_all_devices(test::instance()->physical_devices());
  REQUIRE_THROWS_WITH(select_device(infos, "no-such-gpu"),
                      Catch::Contains("no-such-gpu") && Catch::Contains(infos[0].name));
  REQUIRE_THROWS_AS(select_device(infos, "99"), Error);
  REQUIRE_THROWS_WITH(select_device({}, ""), Catch::Contains("no Vulkan device"));
}

VKF_TEST_CASE("several logical devices on one physical device work side by side",
              "[engine][device]") {
  auto a = test::new_device();
  auto b = test::new_device();
  REQUIRE(a->handle() != b->handle());
  std::vector<float> va{1, 2, 3}, vb{4, 5, 6};
  Buffer ba = a->allocate(12, "a"), bb = b->allocate(12, "b");
  a->upload(ba, va);
  b->upload(bb, vb);
  CHECK(a->download<float>(ba, 3) == va);
  CHECK(b->download<float>(bb, 3) == vb);
}
