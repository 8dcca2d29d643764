#pragma once
// Runs one of the PyTorch side-by-side scripts in bench/ and returns its JSON line, or null when
// VKF_BENCH_TORCH=0, when no interpreter has torch, or when the script reports an error. The
// script runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset.
//
// The interpreter: VKF_PYTHON when set (and only it), else the first of `python3` on PATH (a
// GPU machine's venv, e.g. /opt/torch/.venv), /opt/torch/.venv/bin/python3 and Debian's
// /usr/bin/python3 (python3-torch lives in its dist-packages) that can `import torch`. The
// search runs once per process and says on stderr what it found.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vkf::bench {

// The interpreter that has torch, or "" when none has; probed once.
inline const std::string& torch_python() {
  static const std::string python = [] {
    std::vector<std::string> candidates;
    if (const char* p = std::getenv("VKF_PYTHON"); p && *p)
      candidates = {p};
    else
      candidates = {"python3", "/opt/torch/.venv/bin/python3", "/usr/bin/python3"};
    for (const std::string& c : candidates)
      if (std::system(("'" + c + "' -c 'import torch' >/dev/null 2>&1").c_str()) == 0) {
        std::fprintf(stderr, "PyTorch side: interpreter %s\n", c.c_str());
        return c;
      }
    std::string tried;
    for (const std::string& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
    std::fprintf(stderr, "PyTorch side skipped: no interpreter can import torch (tried %s)\n",
                 tried.c_str());
    return std::string();
  }();
  return python;
}

inline nlohmann::json run_torch(const std::string& script_and_args) {
  if (const char* off = std::getenv("VKF_BENCH_TORCH"); off && std::string(off) == "0") return {};
  const std::string& python = torch_python();
  if (python.empty()) return {};
  // Without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE: set for old OpenBLAS builds on some
  // machines, they halve the CPU anchor (see bench/openblas_env.h).
  const std::string cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE '" + python + "' " +
                          VKF_BENCH_DIR + "/" + script_and_args + " 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || j.contains("error")) {
    std::fprintf(stderr, "PyTorch side failed: %s\n",
                 j.is_discarded() ? "no JSON on stdout" : j["error"].dump().c_str());
    return {};
  }
  return j;
}

}  // namespace vkf::bench
