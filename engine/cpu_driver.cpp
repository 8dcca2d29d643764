#include "engine/cpu_driver.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "engine/error.h"

namespace vkf {
namespace {

bool cpu_has_avx512f() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

CpuDriverSettings decide(const std::string& base) {
  check_cpu_driver_environment();
  CpuDriverSettings s;
  if (const char* w = std::getenv("LP_NATIVE_VECTOR_WIDTH"); w && *w) {
    s.vector_width = w;
  } else if (cpu_has_avx512f()) {
    s.vector_width = "512";
    s.vector_width_chosen = setenv("LP_NATIVE_VECTOR_WIDTH", "512", 0) == 0;
  }
  const char* cache = std::getenv("MESA_SHADER_CACHE_DIR");
  if ((!cache || !*cache) && !base.empty()) {
    const std::string dir =
        base + "/mesa-" + (s.vector_width.empty() ? std::string("default") : s.vector_width);
    std::error_code ec;  // Mesa makes only the last level; without the directory it caches nothing
    std::filesystem::create_directories(dir, ec);
    if (setenv("MESA_SHADER_CACHE_DIR", dir.c_str(), 0) == 0) s.shader_cache_dir = dir;
  }
  return s;
}

}  // namespace

void check_cpu_driver_environment() {
  const char* w = std::getenv("LP_NATIVE_VECTOR_WIDTH");
  if (!w || !*w) return;
  const std::string width = w;
  if (width != "128" && width != "256" && width != "512")
    throw Error("LP_NATIVE_VECTOR_WIDTH='" + width.substr(0, 40) +
                "' is not a vector width lavapipe runs: 128, 256 or 512 (bits), or unset");
}

const CpuDriverSettings& configure_cpu_driver(const std::string& cache_dir) {
  static const CpuDriverSettings settings = decide(cache_dir);
  return settings;
}

}  // namespace vkf
