// vkf tune: finds the fastest correct kernel configurations on this device and driver for the
// shapes a model runs (matmul, attention, LayerNorm, cross-entropy; without a model, the
// benchmark's matmuls), with a progress bar, and writes them to the tuning file the other
// commands then use (--tune). The summary compares each winner with the default (the static
// table's row). --export and --import copy a tuning file out and in (the device and driver must
// match).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>

#include "apps/tool_env/tool_env.h"
#include "apps/vkf/app_options.h"
#include "apps/vkf/bench/row_pattern.h"
#include "apps/vkf/bench/shapes.h"
#include "apps/vkf/command.h"
#include "apps/vkf/tuning_choice.h"
#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/tuning_file.h"
#include "model/checkpoint.h"
#include "model/decode/translator.h"
#include "tune/model_tuner.h"
#include "tune/tuning_verify.h"

namespace vkf::app {
namespace {

struct TuneArgs {
  std::string device, preset, model, budget = "2m", out, export_to, import_from, dtype = "f32";
  std::string wrong_entries;  // test hook: --import entries whose check sees a wrong output
  uint32_t tokens = 0, vocab_size = 8000, len = bench::k_train_len;
};

// The shapes again in each storage type of `dtypes` (the model's are built in f32). Adam has
// none (the fp32 master weights in either storage), and top-k selects from fp32
// log-probabilities in either storage: theirs are kept as they are.
tune::TuneShapes in_storage(const tune::TuneShapes& f32, const std::vector<DType>& dtypes) {
  tune::TuneShapes out;
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    if constexpr (std::is_same_v<F, ops::AdamFamily> || std::is_same_v<F, ops::TopKFamily>) {
      out.of<F>() = f32.of<F>();
    } else {
      for (DType t : dtypes)
        for (typename F::Work w : f32.of<F>()) {
          ops::problem_of(w).dtype = t;
          out.of<F>().push_back(w);
        }
    }
  });
  return out;
}

tune::TuneShapes model_shapes(const TuneArgs& a, const DeviceInfo& info) {
  // Without a model, the benchmark's quick and standard shapes: 1024^3, the Transformer-base
  // FFN at 4096 tokens and its backward (the vocabulary projection takes seconds a run on a CPU
  // device).
  if (a.preset.empty() && a.model.empty()) return bench_tune_shapes(bench::Suite::standard);
  model::ModelConfig c;
  if (!a.model.empty()) {
    c = model::load_checkpoint(model::resolve_checkpoint(a.model)).config;
  } else {
    c = model::ModelConfig::preset(a.preset);
    if (c.vocab_size == 0) c.vocab_size = int(a.vocab_size);
  }
  const uint32_t tokens =
      a.tokens ? a.tokens
               : bench::train_tokens(a.preset.empty() ? "base" : a.preset, info.is_cpu());
  // f32, the storage the model trains in; --dtype adds f16 (in_storage). And the top-k of
  // `vkf translate`'s defaults (beam 4, 32 sentences a batch).
  const model::decode::TranslateOptions translate;
  return model::model_op_problems(
      c, {tokens, a.len, true, DType::f32, translate.beam, translate.batch_size}, info);
}

tune::TuneShapes shapes_for(const TuneArgs& a, const DeviceInfo& info) {
  std::vector<DType> dtypes;
  if (a.dtype == "f32" || a.dtype == "both") dtypes.push_back(DType::f32);
  if (a.dtype == "f16" || a.dtype == "both") dtypes.push_back(DType::f16);
  if (dtypes.back() == DType::f16 && !info.storage16)
    throw Error("--dtype " + a.dtype + ": f16 storage needs 16-bit storage buffers, which " +
                info.name + " lacks");
  return in_storage(model_shapes(a, info), dtypes);
}

void progress_bar(const tune::Progress& p, bool terminal) {
  static std::string last_class;
  constexpr int width = 30;
  const int filled = int(p.fraction * width + 0.5);
  std::string bar(size_t(filled), '#');
  bar += std::string(size_t(width - filled), '.');
  if (terminal) {
    std::fprintf(stderr, "\r[%s] %3.0f%%  %zu/%zu %-26s candidate %zu/%zu%s%s   ", bar.c_str(),
                 100 * p.fraction, std::min(p.shape + 1, p.shapes), p.shapes, p.shape_class.c_str(),
                 p.candidate + 1, p.candidates, p.best.empty() ? "" : "  best ", p.best.c_str());
    if (p.fraction >= 1.0) std::fprintf(stderr, "\n");
  } else if (p.shape_class != last_class) {
    // In a log, a line a shape.
    if (!p.shape_class.empty())
      std::fprintf(stderr, "[%s] %3.0f%%  %zu/%zu %s (%zu candidates)\n", bar.c_str(),
                   100 * p.fraction, p.shape + 1, p.shapes, p.shape_class.c_str(), p.candidates);
    last_class = p.shape_class;
  }
}

int run_tune(const TuneArgs& a) {
  if (!a.preset.empty() && !a.model.empty()) throw Error("--preset and --model exclude each other");
  auto dev = open_device(a.device);
  const std::string own = tuning_file_path(dev->options().pipeline_cache_dir, dev->info());
  if (!a.export_to.empty() || !a.import_from.empty()) {
    if (!a.export_to.empty() && !a.import_from.empty())
      throw Error("--export and --import exclude each other");
    const std::string from = a.import_from.empty() ? own : a.import_from;
    const std::string to = a.import_from.empty() ? a.export_to : (a.out.empty() ? own : a.out);
    if (from.empty() || to.empty()) throw Error("no cache directory for the tuning file");
    refuse_same_file(a.import_from.empty() ? "--export"
                     : a.out.empty()       ? "the tuning file"
                                           : "--out",
                     to, {{a.import_from.empty() ? "the tuning file" : "--import", from}});
    TuningFile f = read_tuning_file(from);
    if (const std::string why = f.key.mismatch(TuningKey::of(dev->info())); !why.empty())
      throw Error("the tuning file " + from + " does not apply to " + dev->label() + ": " + why);
    if (!a.import_from.empty()) {
      // Held to what the tuner holds its own winners to: a wrong entry is dropped, not copied.
      bench::check_row_pattern(a.wrong_entries, "--wrong-kernel");
      const tune::Verification v = tune::verify_tuning(
          *dev, f, dev->options().pipeline_cache_dir, [&](const std::string& entry) {
            return bench::row_pattern_search(a.wrong_entries, entry);
          });
      for (const std::string& note : v.dropped)
        std::cerr << "vkf tune: " << from << ": dropped " << note << "\n";
      std::cerr << "vkf tune: " << v.passed() << " entries passed their checks, "
                << v.dropped.size() << " dropped\n";
    }
    write_tuning_file(to, f);
    std::cerr << "vkf tune: " << from << " -> " << to << " (";
    ops::for_each_family([&]<class F>(std::type_identity<F>) {
      std::cerr << (std::is_same_v<F, ops::MatmulFamily> ? "" : ", ") << f.of<F>().size() << " "
                << F::title;
    });
    std::cerr << " shape classes)\n";
    return 0;
  }
  const double budget = parse_duration(a.budget, "--budget");
  if (budget <= 0) throw Error("--budget must be positive");
  const std::string out = a.out.empty() ? own : a.out;
  if (out.empty()) throw Error("no cache directory for the tuning file: name one with --out");
  refuse_same_file("--out", out, {{"--model", a.model}});
  const tune::TuneShapes shapes = shapes_for(a, dev->info());
  size_t classes = 0;
  std::string families;
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    std::set<std::string> mine;
    for (const auto& w : shapes.of<F>()) mine.insert(F::shape_class(ops::problem_of(w)));
    classes += mine.size();
    if (!mine.empty()) families += (families.empty() ? "" : ", ") + std::string(F::title);
  });
  std::cerr << "vkf tune: " << classes << " shape classes (" << families << ") on " << dev->label()
            << ", budget " << budget << " s\n";
  const bool terminal = isatty(fileno(stderr)) != 0;
  tune::DeviceTimer timer;
  tune::TunerOptions o;
  o.budget_seconds = budget;
  o.progress = [terminal](const tune::Progress& p) { progress_bar(p, terminal); };
  const tune::TuneReport report = tune::tune_model(*dev, shapes, timer, o);
  const TuningFile& f = report.file;
  write_tuning_file(out, f);
  tune::remember_verified(*dev, f, dev->options().pipeline_cache_dir);  // checked as chosen

  print("%-13s %-28s %-24s %-24s %9s  %-34s %9s %8s %s\n", "family", "class", "shape", "default",
        "ms", "tuned", "ms", "speed-up", "(tried, rejected, untried)");
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    for (const TunedOf<F>& t : f.of<F>())
      print("%-13s %-28s %-24s %-24s %9.3f  %-34s %9.3f %7.2fx (%u, %zu, %u)\n", F::name,
            t.shape_class.c_str(), F::dims(t.shape).c_str(), t.default_name.c_str(),
            t.default_seconds * 1e3, F::describe(t.config).c_str(), t.seconds * 1e3,
            t.seconds > 0 ? t.default_seconds / t.seconds : 0.0, t.tried, t.rejected.size(),
            t.untried);
  });
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    for (const TunedOf<F>& t : f.of<F>())
      for (const auto& [cfg, why] : t.rejected)
        print("rejected for %s: %s: %s\n", t.shape_class.c_str(), cfg.c_str(), why.c_str());
  });
  if (report.untried || !report.skipped.empty()) {
    print("budget spent: %u candidates left untried", report.untried);
    if (!report.skipped.empty()) {
      print("; %zu shape classes not searched (they keep the defaults):", report.skipped.size());
      for (const std::string& s : report.skipped) print(" %s;", s.c_str());
    }
    print(" (a larger --budget searches further)\n");
  }
  std::cerr << "vkf tune: wrote " << out << "\n";
  return 0;
}

RegisterCommand reg(
    "tune", "Find the fastest correct kernel configurations on this device and driver",
    [](CLI::App& sub) {
      auto a = std::make_shared<TuneArgs>();
      sub.add_option("--device", a->device, "Device: index, vendor or a part of its name");
      sub.add_option("--preset", a->preset,
                     "Tune the shapes of this model preset (tiny, small, base, big)");
      sub.add_option("--model", a->model, "Tune the shapes of this checkpoint's model");
      sub.add_option("--tokens", a->tokens, "Rows (tokens) of the model's matmuls")
          ->check(int_range(1, 1 << 20));
      sub.add_option(
             "--dtype", a->dtype,
             "Storage type of the shapes tuned: f32, f16 (mixed-precision training) or both")
          ->check(CLI::IsMember({"f32", "f16", "both"}))
          ->capture_default_str();
      sub.add_option("--len", a->len, "Sentence length of the model's attention")
          ->check(int_range(1, 1 << 16))
          ->capture_default_str();
      sub.add_option("--vocab-size", a->vocab_size, "Vocabulary of a --preset model")
          ->check(int_range(5, 1 << 20))
          ->capture_default_str();
      sub.add_option(
             "--budget", a->budget,
             "Time for the whole search (90s, 2m, ...), shared by the shape classes of every "
             "family; no candidate starts once it is spent")
          ->capture_default_str();
      sub.add_option("--out", a->out,
                     "Write the tuning file here (default: the cache directory, where the other "
                     "commands look for it)");
      sub.add_option("--export", a->export_to, "Copy this device's tuning file to FILE");
      sub.add_option("--import", a->import_from,
                     "Install the tuning file FILE for this device (its device and driver must "
                     "match)")
          ->check(CLI::ExistingFile);
      // Test hook (tests/apps/test_robust_checks.cpp): the --import entries matching REGEX see
      // their checked output corrupted, as a wrong kernel would write it, and must be dropped.
      sub.add_option("--wrong-kernel", a->wrong_entries)->group("");
      return [a]() { return run_tune(*a); };
    });

}  // namespace
}  // namespace vkf::app
