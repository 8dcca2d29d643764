#pragma once
// OpenBLAS reads OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE once, when the library loads (before
// main). Some machines set them for old OpenBLAS builds; with Debian 12's OpenBLAS they halve
// sgemm here, and sgemm is the anchor bench_matmul divides by. So a program that calls OpenBLAS
// in-process runs itself again without them, and the anchor is the library's own choice for
// this CPU. VKF_BENCH_KEEP_OPENBLAS_ENV=1 keeps them (to measure what they do). The PyTorch
// side (bench/torch_side.h) unsets them for its child process the same way.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace vkf::bench {

inline void openblas_without_old_cpu_overrides(char** argv) {
  if (const char* keep = std::getenv("VKF_BENCH_KEEP_OPENBLAS_ENV");
      keep && std::string(keep) == "1")
    return;
  if (!std::getenv("OPENBLAS_CORETYPE") && !std::getenv("OPENBLAS_L2_SIZE")) return;
  std::fprintf(stderr,
               "bench: running again without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (they pin "
               "OpenBLAS to an older CPU's kernels; VKF_BENCH_KEEP_OPENBLAS_ENV=1 keeps them)\n");
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
  execv("/proc/self/exe", argv);
  std::perror("bench: execv /proc/self/exe");
  std::exit(1);
}

}  // namespace vkf::bench
