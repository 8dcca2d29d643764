#pragma once
// Corpus chrF with sacreBLEU 2.x's defaults: character n-grams of orders 1..6, no word n-grams,
// beta 2, whitespace removed, case-sensitive, statistics summed over the corpus before the
// F-score, and sacrebleu's default averaging (eps_smoothing=False: precision and recall averaged
// over the orders that have n-grams on both sides, then one F-beta).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vkf::model::eval {

constexpr int k_chrf_char_order = 6;
constexpr int k_chrf_beta = 2;

struct ChrfOrderStats {
  int64_t hyp = 0;    // hypothesis n-grams (0 when the reference has none of this order)
  int64_t ref = 0;    // reference n-grams
  int64_t match = 0;  // clipped matches
};

struct ChrfStats {
  std::array<ChrfOrderStats, k_chrf_char_order> orders{};  // by order - 1
  ChrfStats& operator+=(const ChrfStats& o);
};

struct ChrfScore {
  double score = 0;  // 0..100
  ChrfStats stats;
};

// Which F-score sacrebleu's CHRF._compute_f_score computes.
enum class ChrfAveraging {
  effective_order,  // sacrebleu's default (signature "eff:yes")
  eps_smoothing,  // CHRF(eps_smoothing=True): chrF++.py / Moses / NLTK style, per-order F averaged
};

// Statistics of one sentence: against each reference, the one with the best sentence F-score
// (the first on a tie). Throws vkf::Error on invalid UTF-8.
ChrfStats chrf_sentence_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references);

double chrf_f_score(const ChrfStats& stats,
                    ChrfAveraging averaging = ChrfAveraging::effective_order);

// references[k][i] is reference stream k's line i; line counts must match (vkf::Error).
ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references);

// "chrF2 = 59.73"
std::string format_chrf(const ChrfScore& score);

// e.g. "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:vkf"
std::string chrf_signature(size_t num_refs);

}  // namespace vkf::model::eval
