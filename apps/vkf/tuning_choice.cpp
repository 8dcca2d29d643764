#include "apps/vkf/tuning_choice.h"

#include <cstdio>
#include <filesystem>

#include "apps/tool_env/tool_env.h"
#include "bench/tune/matmul_tuner.h"
#include "engine/error.h"
#include "engine/tuning_file.h"

namespace vkf::app {

void add_tune_option(CLI::App& sub, std::string& value) {
  value = tool::tune_default();
  sub.add_option("--tune", value,
                 "Kernel tuning: auto (this device's tuning file, made by a short first run if "
                 "missing), off (the static tables) or a tuning file (see `vkf tune`)")
      ->capture_default_str();
}

std::vector<ops::MatmulProblem> model_matmul_shapes(const model::ModelConfig& c, uint32_t tokens,
                                                    bool training) {
  const uint32_t d = uint32_t(c.d_model), ff = uint32_t(c.d_ff), v = uint32_t(c.vocab_size);
  // (in, out) of each kind of Linear: attention projections, FFN in and out, the vocabulary.
  std::vector<std::pair<uint32_t, uint32_t>> linears{{d, d}, {d, ff}, {ff, d}};
  if (v) linears.emplace_back(d, v);
  std::vector<ops::MatmulProblem> out;
  for (auto [in, o] : linears) {
    out.push_back({DType::f32, false, true, tokens, o, in});  // y = x W^T
    if (!training) continue;
    out.push_back({DType::f32, false, false, tokens, in, o});  // dx = dy W
    out.push_back({DType::f32, true, false, o, in, tokens});   // dW += dy^T x
  }
  return out;
}

void apply_tuning(Device& dev, const std::string& choice,
                  const std::vector<ops::MatmulProblem>& shapes, const std::string& who,
                  const std::string& cache_dir) {
  auto say = [&](const std::string& line) {
    std::fprintf(stderr, "%s: kernels %s\n", who.c_str(), line.c_str());
  };
  dev.set_tuning(nullptr);
  if (choice == "off") return say("default (--tune off)");
  if (choice != "auto") {
    if (!std::filesystem::exists(choice)) throw Error("--tune: no tuning file " + choice);
    read_tuning_file(choice);  // a malformed file is an error, not a note
    const TuningLoad l = load_tuning(choice, dev.info());
    if (!l.tuning) return say("default (" + l.note + ")");
    dev.set_tuning(l.tuning);
    return say("tuned (" + choice + ")");
  }
  const std::string path = tuning_file_path(
      cache_dir.empty() ? dev.options().pipeline_cache_dir : cache_dir, dev.info());
  if (path.empty()) return say("default (no cache directory for a tuning file)");
  TuningLoad l = load_tuning(path, dev.info());
  if (!l.tuning) {
    // The first run on this device and driver: a short search, kept for the next runs.
    std::fprintf(stderr,
                 "%s: no tuning file for %s yet: tuning matmuls for %.0f s (--tune off "
                 "skips this; `vkf tune` searches longer)\n",
                 who.c_str(), dev.label().c_str(), k_auto_tune_seconds);
    tune::DeviceTimer timer;
    tune::TunerOptions o;
    o.budget_seconds = k_auto_tune_seconds;
    write_tuning_file(path, tune::tune_matmuls(dev, shapes, timer, o));
    l = load_tuning(path, dev.info());
    if (!l.tuning) throw Error("the tuning file just written does not load: " + l.note);
  }
  dev.set_tuning(l.tuning);
  say("tuned (" + path + ")");
}

}  // namespace vkf::app
