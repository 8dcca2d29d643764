#pragma once
// Runs one of the PyTorch side-by-side scripts in bench/ (Debian's python3-torch, CPU) and
// returns its JSON line, or null when PyTorch or the interpreter is missing or
// VKF_BENCH_TORCH=0. Debian's interpreter by default: python3-torch lives in its dist-packages,
// whatever python3 comes first on PATH (VKF_PYTHON overrides).
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace vkf::bench {

inline nlohmann::json run_torch(const std::string& script_and_args) {
  if (const char* off = std::getenv("VKF_BENCH_TORCH"); off && std::string(off) == "0") return {};
  const std::string python =
      std::getenv("VKF_PYTHON") ? std::getenv("VKF_PYTHON") : "/usr/bin/python3";
  const std::string cmd = python + " " + VKF_BENCH_DIR + "/" + script_and_args + " 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || j.contains("error")) return {};
  return j;
}

}  // namespace vkf::bench
