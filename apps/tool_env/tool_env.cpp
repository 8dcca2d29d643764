#include "apps/tool_env/tool_env.h"

#include <cstdio>
#include <cstdlib>

#include "engine/error.h"
#include "engine/stop_request.h"

namespace vkf::tool {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

InstanceOptions instance_options(InstanceOptions base) {
  const std::string v = env("VKF_VALIDATION");
  if (!v.empty() && v != "0") base.validation = true;
  // VKF_LAYERS=A:B (the loader's own separator), enabled after validation.
  const std::string layers = env("VKF_LAYERS");
  for (size_t start = 0; start < layers.size();) {
    size_t end = layers.find(':', start);
    if (end == std::string::npos) end = layers.size();
    if (end > start) base.layers.push_back(layers.substr(start, end - start));
    start = end + 1;
  }
  return base;
}

std::string cache_dir() {
  if (const char* d = std::getenv("VKF_CACHE_DIR")) return d;
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return x + "/vkformer";
  if (const std::string home = env("HOME"); !home.empty()) return home + "/.cache/vkformer";
  return "";
}

DeviceOptions device_options(DeviceOptions base) {
  if (base.pipeline_cache_dir.empty()) base.pipeline_cache_dir = cache_dir();
  if (const std::string t = env("VKF_MATMUL_TEXEL"); !t.empty()) {
    if (t != "0" && t != "1") throw Error("VKF_MATMUL_TEXEL must be 0 or 1, not '" + t + "'");
    base.ops.matmul_texel_views = t == "1";
  }
  if (const std::string k = env("VKF_MATMUL_SPLIT_K"); !k.empty()) {
    if (k != "0" && k != "1") throw Error("VKF_MATMUL_SPLIT_K must be 0 or 1, not '" + k + "'");
    base.ops.matmul_split_k = k == "1";
  }
  if (const std::string p = env("VKF_ATTENTION_PATH"); !p.empty() && p != "automatic") {
    if (p != "tiled" && p != "rows")
      throw Error("VKF_ATTENTION_PATH must be tiled, rows or automatic, not '" + p + "'");
    base.ops.attention_rows = p == "rows";
  }
  if (const std::string l = env("VKF_LOG_PIPELINES");
      !l.empty() && l != "0" && !base.on_pipeline_compile) {
    // One line before each compile, so a compile that never ends still names its kernel.
    base.on_pipeline_compile = [](const KernelSpec& spec, double seconds) {
      if (seconds < 0)
        std::fprintf(stderr, "vkf: compiling %s\n", describe(spec).c_str());
      else
        std::fprintf(stderr, "vkf: compiled %s in %.3f s\n", describe(spec).c_str(), seconds);
    };
  }
  if (!base.on_first_dispatch_wait) {
    // Long work shows progress: a driver that compiles kernels at their first dispatch (Mesa's
    // lavapipe) can hold the first step for minutes.
    base.on_first_dispatch_wait = [](uint32_t kernels, double seconds) {
      std::fprintf(stderr,
                   "vkf: compiling kernels: %.0f s so far (the driver compiles %u new kernels at "
                   "their first dispatch)\n",
                   seconds, kernels);
      // A submitted command buffer cannot be taken back: a stop waits for the compile to end.
      if (stop_requested())
        std::fprintf(stderr,
                     "vkf: the stop takes effect when the driver's compile ends (it cannot be "
                     "interrupted); signal again to leave at once\n");
    };
  }
  return base;
}

std::string tune_default() {
  const std::string t = env("VKF_TUNE");
  return t.empty() ? "auto" : t;
}

double tune_budget_seconds() {
  const std::string t = env("VKF_TUNE_BUDGET");
  if (t.empty()) return 30;
  char* end = nullptr;
  const double seconds = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0' || !(seconds > 0) || seconds > 1e6)
    throw Error("VKF_TUNE_BUDGET must be a positive number of seconds, not '" + t + "'");
  return seconds;
}

const CpuDriverSettings& configure_cpu_driver() {
  const CpuDriverSettings& s = vkf::configure_cpu_driver(cache_dir());
  static const bool said = [&] {
    if (!s.shader_cache_off.empty()) std::fprintf(stderr, "vkf: %s\n", s.shader_cache_off.c_str());
    return true;
  }();
  (void)said;
  return s;
}

}  // namespace vkf::tool
