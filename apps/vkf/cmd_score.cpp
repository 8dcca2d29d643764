// vkf score: per line pair, the summed natural-log probability of the target (teacher forced,
// dropout off, no label smoothing, EOS included) and the number of target tokens, tab-separated
// (docs/design.md). A pair that cannot be scored prints "nan<TAB>0", is reported on stderr and
// makes the exit status 1.
#include <cstdio>
#include <iostream>

#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "engine/error.h"
#include "model/scorer.h"

namespace vkf::app {
namespace {

struct ScoreArgs {
  std::string model, vocab, src, tgt, device;
  std::string precision = "fp32";  // --precision fp32|fp16|auto (model/precision.h)
  model::ScoreOptions options;
};

int run_score(const ScoreArgs& a) {
  model::ScoreOptions options = a.options;
  options.precision = model::parse_precision(a.precision);
  model::LoadedModel m = model::load_model(a.model, a.vocab);
  auto dev = open_device(a.device);
  const model::CorpusFiles files =
      a.tgt.empty() ? model::CorpusFiles::tsv(a.src) : model::CorpusFiles::two_files(a.src, a.tgt);
  auto scores = model::score_corpus(*dev, m, files, options);
  // Through std::cout, whose failures keep their cause (watch_standard_output): a full disk is
  // named as such, whichever write meets it.
  int bad = 0;
  char line[64];
  for (size_t i = 0; i < scores.size(); ++i) {
    const auto& s = scores[i];
    if (!s.error.empty()) {
      std::fprintf(stderr, "vkf score: line %zu: %s\n", i + 1, s.error.c_str());
      std::cout << "nan\t0\n";
      ++bad;
    } else {
      std::snprintf(line, sizeof line, "%.6f\t%lld\n", s.logprob, static_cast<long long>(s.tokens));
      std::cout << line;
    }
  }
  if (bad)
    std::fprintf(stderr, "vkf score: %d of %zu pairs could not be scored\n", bad, scores.size());
  return bad ? 1 : 0;
}

RegisterCommand reg(
    "score", "Log-probability of each target given its source (teacher forced)", [](CLI::App& sub) {
      auto a = std::make_shared<ScoreArgs>();
      sub.add_option("--model", a->model,
                     "Checkpoint file, or a directory (its "
                     "latest checkpoint)")
          ->required();
      sub.add_option("--src", a->src, "Source file (or a source<TAB>target file)")->required();
      sub.add_option("--tgt", a->tgt, "Target file, line-aligned with --src");
      sub.add_option("--vocab", a->vocab,
                     "SentencePiece model (default: the one beside the checkpoint)");
      sub.add_option("--max-tokens", a->options.max_tokens, "Tokens a side per batch")
          ->check(int_range(1))
          ->capture_default_str();
      add_max_line_bytes(sub, a->options.max_line_bytes);
      sub.add_option("--device", a->device, "Device: index, vendor or name part");
      sub.add_option("--precision", a->precision,
                     "fp32 (the default: scores to compare with other implementations), fp16 "
                     "(fp16 weights and activations, fp32 arithmetic and loss), or auto (fp16 on "
                     "a GPU with 16-bit storage, else fp32)")
          ->capture_default_str();
      return [a]() { return run_score(*a); };
    });

}  // namespace
}  // namespace vkf::app
