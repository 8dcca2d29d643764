#include "engine/cpu_driver.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "engine/error.h"

namespace vkf {
namespace {

// Mesa's default cache holds up to 1 GiB; a folder with less than this free is nearly full.
constexpr uint64_t k_min_cache_free_bytes = uint64_t(64) << 20;

bool cpu_has_avx512f() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

// Why `dir` cannot hold Mesa's shader cache ("" when it can): it must be a folder this process
// can write, with k_min_cache_free_bytes free.
std::string unfit_for_cache(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "its folder " + dir + " cannot be made";
  if (::access(dir.c_str(), W_OK) != 0) return "its folder " + dir + " is not writable";
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return "the free space in " + dir + " is unknown";
  if (fs.f_flag & ST_RDONLY) return "its folder " + dir + " is on a read-only filesystem";
  const uint64_t free_bytes = uint64_t(fs.f_bavail) * uint64_t(fs.f_frsize);
  if (free_bytes < k_min_cache_free_bytes)
    return "its folder " + dir + " has " + std::to_string(free_bytes >> 20) +
           " MiB free (it needs " + std::to_string(k_min_cache_free_bytes >> 20) + ")";
  return "";
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
    // Mesa's cache thread maps its files and dies of SIGBUS when the disk under them is full:
    // pointed only at a folder that can take it, else the cache is off, and said to be.
    if (const std::string why = unfit_for_cache(dir); !why.empty()) {
      if (setenv("MESA_SHADER_CACHE_DISABLE", "true", 0) == 0)
        s.shader_cache_off = "Mesa's shader cache is off: " + why;
    } else if (setenv("MESA_SHADER_CACHE_DIR", dir.c_str(), 0) == 0) {
      s.shader_cache_dir = dir;
    }
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
