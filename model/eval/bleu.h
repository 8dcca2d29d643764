#pragma once
// Corpus BLEU with sacreBLEU 2.x's defaults: 13a tokenisation, case-sensitive, n-grams up to 4,
// 'exp' smoothing, no effective order, closest reference length. The translator calls
// corpus_bleu() on strings; `vkf bleu` formats the result like sacreBLEU.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vkf::model::eval {

constexpr int k_bleu_max_order = 4;

// Sufficient statistics, summed over sentences (sacrebleu's [hyp_len, ref_len, correct...,
// total...]).
struct BleuStats {
  int64_t hyp_len = 0;                              // hypothesis tokens
  int64_t ref_len = 0;                              // closest reference length per sentence, summed
  std::array<int64_t, k_bleu_max_order> correct{};  // clipped n-gram matches, by order - 1
  std::array<int64_t, k_bleu_max_order> total{};    // hypothesis n-grams, by order - 1

  BleuStats& operator+=(const BleuStats& o);
};

struct BleuScore {
  double score = 0;                                   // 0..100
  std::array<double, k_bleu_max_order> precisions{};  // percent, smoothed as sacrebleu reports them
  double bp = 0;                                      // brevity penalty
  double ratio = 0;                                   // hyp_len / ref_len (0 when ref_len is 0)
  BleuStats stats;
};

// Statistics of one sentence against its references (each already raw text, not tokenized).
BleuStats bleu_sentence_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references);

// The score from summed statistics (sacrebleu BLEU.compute_bleu with smooth_method='exp').
BleuScore bleu_from_stats(const BleuStats& stats);

// references[k][i] is reference stream k's translation of hypotheses[i]; every stream must have
// as many lines as `hypotheses` (vkf::Error otherwise).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references);

// "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
std::string format_bleu(const BleuScore& score);
// The part after the score: "82.4/50.0/45.5/37.5 (BP = 0.943 ... ref_len = 18)"
std::string format_bleu_details(const BleuScore& score);

// sacreBLEU-style signature, e.g. "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:vkf".
std::string bleu_signature(size_t num_refs);

}  // namespace vkf::model::eval
