// vkf bleu HYP REF [REF...]: corpus BLEU (and chrF with --chrf) with sacreBLEU 2.x's defaults,
// printed like sacreBLEU, or as JSON with --json. HYP may be "-" for standard input.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "model/eval/bleu.h"
#include "model/eval/chrf.h"
#include "model/eval/text_lines.h"

namespace vkf::app {
namespace {

namespace eval = vkf::model::eval;

// The scores are vkf's own reimplementation; the signature says so with "version:vkf".
constexpr const char* k_implementation = "vkf reimplementation of sacreBLEU 2.x defaults";

nlohmann::json bleu_json(const eval::BleuScore& s, size_t num_refs) {
  return {
      {"name", "BLEU"},
      {"score", s.score},
      {"precisions", s.precisions},
      {"bp", s.bp},
      {"ratio", s.ratio},
      {"hyp_len", s.stats.hyp_len},
      {"ref_len", s.stats.ref_len},
      {"counts", s.stats.correct},
      {"totals", s.stats.total},
      {"signature", eval::bleu_signature(num_refs)},
      {"verbose_score", eval::format_bleu_details(s)},
      {"implementation", k_implementation},
  };
}

nlohmann::json chrf_json(const eval::ChrfScore& s, size_t num_refs) {
  return {
      {"name", "chrF2"},
      {"score", s.score},
      {"signature", eval::chrf_signature(num_refs)},
      {"implementation", k_implementation},
  };
}

struct BleuArgs {
  std::string hypothesis_path;
  std::vector<std::string> reference_paths;
  bool chrf = false;
  bool json = false;
  uint64_t max_line_bytes = model::k_default_max_line_bytes;
};

int run(const BleuArgs& args) {
  const std::vector<std::string> hyps =
      eval::read_text_file(args.hypothesis_path, args.max_line_bytes);
  std::vector<std::vector<std::string>> refs;
  for (const std::string& path : args.reference_paths)
    refs.push_back(eval::read_text_file(path, args.max_line_bytes));
  const size_t num_refs = refs.size();
  const eval::BleuScore bleu = eval::corpus_bleu(hyps, refs);
  if (args.json) {
    nlohmann::json out{{"bleu", bleu_json(bleu, num_refs)}};
    if (args.chrf) out["chrf"] = chrf_json(eval::corpus_chrf(hyps, refs), num_refs);
    std::cout << out.dump(1) << "\n";
  } else {
    std::cout << eval::format_bleu(bleu) << "\n";
    if (args.chrf) std::cout << eval::format_chrf(eval::corpus_chrf(hyps, refs)) << "\n";
  }
  return 0;
}

std::function<int()> setup(CLI::App& sub) {
  auto args = std::make_shared<BleuArgs>();
  sub.add_option("hypothesis", args->hypothesis_path,
                 "Detokenized system output, one sentence a line ('-': stdin)")
      ->required();
  sub.add_option("references", args->reference_paths,
                 "Reference file(s), line-parallel to the hypothesis")
      ->required();
  sub.add_flag("--chrf", args->chrf, "Also print chrF2 (sacreBLEU defaults)");
  sub.add_flag("--json", args->json, "Machine-readable output");
  add_max_line_bytes(sub, args->max_line_bytes);
  return [args] { return run(*args); };
}

RegisterCommand reg("bleu", "Corpus BLEU (and chrF) of a translation, as sacreBLEU computes it",
                    setup);

}  // namespace
}  // namespace vkf::app
