#include "apps/vkf/bench/fingerprint.h"

#include <sys/utsname.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "engine/cpu_driver.h"

extern char** environ;

namespace vkf::bench {
namespace {

// The value after "key" and a separator (':' or '=') on the first line that starts with it.
std::string file_value(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    size_t p = line.find_first_of(":=", key.size());
    if (p == std::string::npos) continue;
    std::string v = line.substr(p + 1);
    v.erase(0, v.find_first_not_of(" \t\""));
    while (!v.empty() && (v.back() == '"' || v.back() == ' ')) v.pop_back();
    return v;
  }
  return "";
}

}  // namespace

nlohmann::json device_fingerprint(const DeviceInfo& d) {
  nlohmann::json f = nlohmann::json::parse(devices_json({d})).at(0);
  f["max_workgroup_size"] = d.max_workgroup_size;
  f["max_workgroup_count"] = d.max_workgroup_count;
  f["min_storage_offset_alignment"] = d.min_storage_offset_alignment;
  f["max_texel_buffer_elements"] = d.max_texel_buffer_elements;
  f["subgroup_size_control"] = d.subgroup_size_control;
  f["timestamp_period_ns"] = d.timestamp_period_ns;
  if (d.is_cpu()) {
    // lavapipe's SIMD width is chosen per process (engine/cpu_driver.h) and changes every rate.
    // The tools configured the driver before the first instance; a later call returns what they
    // decided (the argument only matters on a first call).
    const std::string& w = configure_cpu_driver("").vector_width;
    f["lavapipe_vector_width"] = w.empty() ? "driver default" : w;
  }
  return f;
}

std::string device_label(const DeviceInfo& d) {
  std::string label = d.name;
  if (!d.driver_info.empty() && d.name.find(d.driver_info) == std::string::npos)
    label += ", " + d.driver_info;
  return label;
}

nlohmann::json host_description() {
  nlohmann::json h;
  h["cpu"] = file_value("/proc/cpuinfo", "model name");
  h["logical_cores"] = std::thread::hardware_concurrency();
  h["os"] = file_value("/etc/os-release", "PRETTY_NAME");
  // On a shared machine the rates move with the load: the 1-minute load average at the start.
  std::ifstream load("/proc/loadavg");
  double load1 = -1;
  if (load >> load1) h["load_average_1min"] = load1;
  utsname u{};
  if (uname(&u) == 0) h["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  // The variables that change what runs: vkformer's own (VKF_*) and Mesa's llvmpipe (LP_*).
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("VKF_", 0) != 0 && kv.rfind("LP_", 0) != 0) continue;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  h["environment"] = env;
  return h;
}

}  // namespace vkf::bench
