#include "apps/vkf/tuning_choice.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "apps/tool_env/tool_env.h"
#include "engine/error.h"
#include "engine/tuning_file.h"
#include "model/decode/state.h"
#include "model/params.h"

namespace vkf::app {
namespace {

// "matmul, attention, LayerNorm": the families `shapes` holds.
std::string families(const tune::TuneShapes& shapes) {
  std::string out;
  auto add = [&out](bool present, const char* name) {
    if (present) out += (out.empty() ? "" : ", ") + std::string(name);
  };
  add(!shapes.matmul.empty(), "matmul");
  add(!shapes.attention.empty(), "attention");
  add(!shapes.layer_norm.empty(), "LayerNorm");
  add(!shapes.cross_entropy.empty(), "cross-entropy");
  add(!shapes.topk.empty(), "top-k");
  add(!shapes.adam.empty(), "Adam");
  return out;
}

}  // namespace

void add_tune_option(CLI::App& sub, std::string& value) {
  value = tool::tune_default();
  sub.add_option("--tune", value,
                 "Kernel tuning: auto (this device's tuning file, made by a short first run if "
                 "missing), off (the static tables) or a tuning file (see `vkf tune`)")
      ->capture_default_str();
}

tune::TuneShapes model_tune_shapes(const model::ModelConfig& c, const ModelWork& work,
                                   const DeviceInfo& info) {
  tune::TuneShapes out;
  const uint32_t tokens = work.tokens, d = uint32_t(c.d_model), ff = uint32_t(c.d_ff),
                 v = uint32_t(c.vocab_size);
  // (in, out) of each kind of Linear: attention projections, FFN in and out, the vocabulary.
  std::vector<std::pair<uint32_t, uint32_t>> linears{{d, d}, {d, ff}, {ff, d}};
  if (v) linears.emplace_back(d, v);
  for (auto [in, o] : linears) {
    // y = x W^T; decoding gives it a split-k workspace (model/decode/state.h), training not.
    out.matmul.push_back({work.dtype, false, true, tokens, o, in, !work.training});
    if (!work.training) continue;
    out.matmul.push_back({work.dtype, false, false, tokens, in, o});  // dx = dy W
    // dW += dy^T x, with the split-k workspace training gives it (model/layers.cpp)
    out.matmul.push_back({work.dtype, true, false, o, in, tokens, true});
  }
  // The encoder's self-attention and the cross-attention (full) and, training, the decoder's
  // (causal) over sentences of `len` tokens.
  const uint32_t len = std::max(1u, std::min(work.len, tokens));
  const uint32_t dk = uint32_t(c.head_dim_k()), dv = uint32_t(c.head_dim_v());
  for (bool causal : {false, true}) {
    if (causal && !work.training) continue;
    for (auto kernel : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                        ops::AttentionKernel::backward_q}) {
      if (kernel != ops::AttentionKernel::forward && !work.training) continue;
      out.attention.push_back({{work.dtype, kernel, dk, dv, len, len, causal},
                               std::max(1u, tokens / len),
                               uint32_t(c.heads)});
    }
  }
  // The row kernels are timed at up to 1024 rows (256 on a CPU device): a workgroup reduces a
  // row, so more rows repeat the same work (1024 workgroups fill a GPU, 256 a CPU's threads),
  // while a CPU device spends a second or more on 1024 rows of the vocabulary.
  const uint32_t rows = std::min(tokens, info.is_cpu() ? 256u : 1024u);
  out.layer_norm.push_back({work.dtype, false, rows, d});
  if (work.training) out.layer_norm.push_back({work.dtype, true, rows, d});
  if (work.training && v > 0) out.cross_entropy.push_back({work.dtype, rows, v});
  if (work.training && v > 0)
    out.adam.push_back(
        {uint32_t(std::min<uint64_t>(model::ParamLayout(c).total_floats(), 0xffffffffu))});
  if (work.beam && work.sentences && v > 0)
    out.topk.push_back({DType::f32, work.beam * work.sentences, v,
                        model::decode::DecodeShape::candidates_for(work.beam, v)});
  return out;
}

tune::TuneShapes bench_tune_shapes(bench::Suite suite) {
  tune::TuneShapes out;
  for (const bench::MatmulShape& s : bench::matmul_shapes())
    if (s.suite <= suite && double(s.m) * s.n * s.k <= 4294967296.0)
      // A^T B with a split-k workspace, as `vkf bench` and training run it.
      out.matmul.push_back({DType::f32, s.form == bench::MatmulForm::atb,
                            s.form == bench::MatmulForm::abt, s.m, s.n, s.k,
                            s.form == bench::MatmulForm::atb});
  return out;
}

void apply_tuning(Device& dev, const std::string& choice, const tune::TuneShapes& shapes,
                  const std::string& who, const std::string& cache_dir) {
  auto say = [&](const std::string& line) {
    std::fprintf(stderr, "%s: kernels %s\n", who.c_str(), line.c_str());
  };
  dev.set_tuning(nullptr);
  if (choice == "off") return say("default (--tune off)");
  if (choice != "auto") {
    // A symlink loop or an unreadable folder is read_tuning_file's to name, in words.
    std::error_code ec;
    if (!std::filesystem::exists(choice, ec) && !ec)
      throw Error("--tune: no tuning file " + choice);
    read_tuning_file(choice);  // a malformed or unreadable file is an error, not a note
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
    const double budget = tool::tune_budget_seconds();
    std::fprintf(stderr,
                 "%s: no tuning file for %s yet: tuning its kernels (%s) for %g s (--tune off "
                 "skips this; `vkf tune` searches longer)\n",
                 who.c_str(), dev.label().c_str(), families(shapes).c_str(), budget);
    tune::DeviceTimer timer;
    tune::TunerOptions o;
    o.budget_seconds = budget;
    const tune::TuneReport report = tune::tune_model(dev, shapes, timer, o);
    write_tuning_file(path, report.file);
    // Named so a user knows what a longer `vkf tune` would add (a slow device or a large model
    // can spend the whole budget on the first families).
    if (!report.skipped.empty()) {
      std::string names;
      for (const std::string& s : report.skipped) names += (names.empty() ? "" : ", ") + s;
      std::fprintf(stderr, "%s: budget spent; %zu shape classes keep the defaults: %s\n",
                   who.c_str(), report.skipped.size(), names.c_str());
    }
    l = load_tuning(path, dev.info());
    if (!l.tuning) throw Error("the tuning file just written does not load: " + l.note);
  }
  dev.set_tuning(l.tuning);
  say("tuned (" + path + ")");
}

}  // namespace vkf::app
