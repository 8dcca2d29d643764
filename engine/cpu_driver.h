#pragma once
// Process-wide settings for Mesa's CPU Vulkan driver (lavapipe, built on llvmpipe). The driver
// reads them once, when the first Vulkan instance loads it, so configure_cpu_driver() must run
// before any Instance is created; the vkf command, the tests and the benchmarks call it first
// thing. An application embedding the engine may call it too, or leave the driver as it is.
//
// - Vector width. llvmpipe compiles a compute shader to SIMD code LP_NATIVE_VECTOR_WIDTH bits
//   wide: 256 by default, so subgroups of 8. On a CPU with AVX-512, 512 bits (subgroups of 16)
//   doubles the FMA rate lavapipe can reach (120 -> 215 GFLOP/s on this project's 2-core AMD
//   EPYC machines) and ran the small preset's training step 1.06-1.10x and the matmuls
//   1.1-1.3x faster (docs/performance.md); the matmul gains less than the peak because it is bound
//   by per-lane loads. Chosen when the CPU has AVX-512F and LP_NATIVE_VECTOR_WIDTH is unset;
//   LP_NATIVE_VECTOR_WIDTH=256 restores the driver's default.
// - Shader cache. Mesa 22.3 keys its shader disk cache without the vector width, so code cached
//   at one width is handed to a driver running at another (seen here: 512-bit code, FMA rate
//   and all, ran under a 256-bit driver), although the subgroup size the shaders were built
//   for differs. Unless MESA_SHADER_CACHE_DIR is set, each width gets its own directory under the
//   `cache_dir` given (<cache_dir>/mesa-<width>; the tools pass their pipeline-cache directory).
//   A folder that is not writable or has less than 64 MiB free is not used: the cache is turned
//   off instead (MESA_SHADER_CACHE_DISABLE), as shader_cache_off says.
//
// This is the one place where the engine reads (and sets) environment variables: they are how
// Mesa is configured, process-wide, and nothing calls this unless the application does.
#include <string>

namespace vkf {

struct CpuDriverSettings {
  std::string vector_width;  // LP_NATIVE_VECTOR_WIDTH as the driver sees it; "" = its default
  bool vector_width_chosen = false;  // set here (not by the user)
  std::string shader_cache_dir;      // MESA_SHADER_CACHE_DIR set here; "" = left as it was
  // Why MESA_SHADER_CACHE_DISABLE was set here: the cache folder was not writable or had less
  // than 64 MiB free (a full disk kills Mesa's cache thread with SIGBUS). "" = not set.
  std::string shader_cache_off;
};

// Throws vkf::Error when LP_NATIVE_VECTOR_WIDTH holds a width llvmpipe does not build for (it
// takes any value, and crashes compiling for 7): 128, 256 and 512 pass, as does unset. Every
// Instance (the C API's too) and configure_cpu_driver check it.
void check_cpu_driver_environment();

// Idempotent: the first call decides and sets the environment; later calls return the same.
// cache_dir: where Mesa's per-width shader caches go; "" leaves MESA_SHADER_CACHE_DIR alone.
const CpuDriverSettings& configure_cpu_driver(const std::string& cache_dir);

}  // namespace vkf
