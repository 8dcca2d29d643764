#include "apps/vkf/tuning_choice.h"

#include <cstdio>

#include "apps/tool_env/tool_env.h"

namespace vkf::app {
void add_tune_option(CLI::App& sub, std::string& value) {
  value = tool::tune_default();
  sub.add_option("--tune", value,
                 "Kernel tuning: auto (this device's tuning file, made by a short first run if "
                 "missing), off (the static tables) or a tuning file (see `vkf tune`)")
      ->capture_default_str();
}

tune::TuneShapes bench_tune_shapes(bench::Suite suite) {
  tune::TuneShapes out;
  for (const bench::MatmulShape& s : bench::matmul_shapes())
    if (s.suite <= suite && double(s.m) * s.n * s.k <= 4294967296.0)
      // A^T B with a split-k workspace, as `vkf bench` and training run it.
      out.of<ops::MatmulFamily>().push_back({DType::f32, s.form == bench::MatmulForm::atb,
                                             s.form == bench::MatmulForm::abt, s.m, s.n, s.k,
                                             s.form == bench::MatmulForm::atb});
  return out;
}

model::TuningChoice tuning_choice(const std::string& value, const std::string& cache_dir) {
  model::TuningChoice c;
  c.use = value;
  c.cache_dir = cache_dir;
  if (value == "auto") c.budget_seconds = tool::tune_budget_seconds();
  return c;
}

void apply_tuning(Device& dev, const std::string& choice, const tune::TuneShapes& shapes,
                  const std::string& who, const std::string& cache_dir) {
  auto say = [&](const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), line.c_str());
  };
  say("kernels " + model::apply_tuning(dev, tuning_choice(choice, cache_dir), shapes, say));
}

}  // namespace vkf::app
