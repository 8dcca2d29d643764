// vkf devices: list every Vulkan device (table or --json); --self-check runs a small kernel on
// the selected device and compares it with the CPU.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "apps/tool_env/tool_env.h"
#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "apps/vkf/profile_report.h"
#include "engine/engine.h"
#include "engine/ops/basic.h"

namespace vkf::app {
namespace {

int self_check(const std::string& selector) {
  auto instance = std::make_shared<Instance>(tool::instance_options());
  auto dev = Device::create(instance, tool::device_options({.selector = selector}));
  constexpr uint32_t n = 100003;  // not a multiple of any workgroup size
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = std::sin(float(i));
    y[i] = std::cos(float(i));
  }
  Buffer bx = dev->allocate(n * 4, "x"), by = dev->allocate(n * 4, "y");
  Buffer scalars = dev->allocate(16, "scalars", MemoryKind::host);
  dev->upload(bx, x);
  dev->upload(by, y);
  reinterpret_cast<float*>(scalars.mapped())[0] = 0.5f;
  Recorder rec(*dev);
  ops::axpy(*dev, rec, bx, by, scalars, 0, n);
  rec.finish().run();
  auto got = dev->download<float>(by, n);
  double worst = 0;
  for (uint32_t i = 0; i < n; ++i)
    worst = std::max(worst, double(std::fabs(got[i] - (0.5f * x[i] + y[i]))));
  print("self-check on %s: axpy over %u elements, max error %.3g: %s\n", dev->label().c_str(), n,
        worst, worst < 1e-6 ? "ok" : "FAILED");
  return worst < 1e-6 ? 0 : 1;
}

RegisterCommand reg("devices", "List Vulkan devices and their capabilities", [](CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  auto check = std::make_shared<bool>(false);
  auto selector = std::make_shared<std::string>();
  auto profile = std::make_shared<std::string>();
  sub.add_flag("--json", *json, "Machine-readable output");
  sub.add_flag("--self-check", *check, "Run a kernel on the selected device and verify it");
  sub.add_option("--device", *selector,
                 "Device for --self-check and --profile: index, vendor or name part");
  sub.add_option("--profile", *profile,
                 "A device profile (JSON, docs/profiles.md): the selected device restricted to it, "
                 "and the kernels the engine would choose and what it would refuse there");
  return [=]() {
    Instance instance(tool::instance_options());
    auto infos = query_all_devices(instance.physical_devices(), instance.get());
    if (!profile->empty()) {
      if (infos.empty()) throw Error("vkf devices --profile: no Vulkan device to restrict");
      std::cout << profile_report(select_device(infos, *selector), *profile);
      return 0;
    }
    if (*json) {
      std::cout << devices_json(infos) << "\n";
    } else {
      std::cout << devices_table(infos);
      if (!infos.empty())
        std::cout << "default device: [" << select_device(infos, "").index << "]\n";
    }
    if (*check) return self_check(*selector);
    return 0;
  };
});

}  // namespace
}  // namespace vkf::app
