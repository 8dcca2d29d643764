// chrF as sacrebleu 2.x computes it (sacrebleu/metrics/chrf.py: extract_all_char_ngrams,
// CHRF._get_match_statistics, CHRF._compute_segment_statistics, CHRF._compute_f_score).
#include "model/eval/chrf.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "model/eval/parallel.h"
#include "model/eval/utf8.h"

namespace vkf::model::eval {
namespace {

using CharNgrams = std::unordered_map<std::u32string_view, int64_t>;

// Code points with every Python whitespace removed (''.join(line.split())): n-grams of
// "a b" are those of "ab".
std::u32string squeeze(const std::string& sentence) {
  std::u32string chars = decode_utf8(sentence, "chrF sentence");
  std::erase_if(chars, is_python_space);
  return chars;
}

// n-grams of one order; the views point into `chars`.
CharNgrams char_ngrams(const std::u32string& chars, int n) {
  CharNgrams counts;
  const std::u32string_view all(chars);
  for (size_t i = 0; i + n <= all.size(); ++i) ++counts[all.substr(i, n)];
  return counts;
}

ChrfOrderStats match_stats(const CharNgrams& hyp, const CharNgrams& ref) {
  ChrfOrderStats s;
  int64_t hyp_count = 0;
  for (const auto& [ngram, count] : hyp) {
    hyp_count += count;
    if (auto it = ref.find(ngram); it != ref.end()) s.match += std::min(count, it->second);
  }
  for (const auto& [ngram, count] : ref) s.ref += count;
  // sacrebleu: "Don't count hits if no reference exists for that n-gram".
  s.hyp = ref.empty() ? 0 : hyp_count;
  return s;
}

}  // namespace

ChrfStats& ChrfStats::operator+=(const ChrfStats& o) {
  for (int n = 0; n < k_chrf_char_order; ++n) {
    orders[n].hyp += o.orders[n].hyp;
    orders[n].ref += o.orders[n].ref;
    orders[n].match += o.orders[n].match;
  }
  return *this;
}

ChrfStats chrf_sentence_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references) {
  const std::u32string hyp_chars = squeeze(hypothesis);
  std::vector<CharNgrams> hyp_ngrams;
  for (int n = 1; n <= k_chrf_char_order; ++n) hyp_ngrams.push_back(char_ngrams(hyp_chars, n));
  ChrfStats best;
  double best_f = -1.0;
  for (const std::string& ref : references) {
    const std::u32string ref_chars = squeeze(ref);
    ChrfStats stats;
    for (int n = 1; n <= k_chrf_char_order; ++n)
      stats.orders[n - 1] = match_stats(hyp_ngrams[n - 1], char_ngrams(ref_chars, n));
    const double f = chrf_f_score(stats);
    if (f > best_f) {
      best_f = f;
      best = stats;
    }
  }
  return best;
}

double chrf_f_score(const ChrfStats& stats, ChrfAveraging averaging) {
  constexpr double eps = 1e-16;  // sacrebleu's smoothing for an order without n-grams
  constexpr double factor = double(k_chrf_beta) * k_chrf_beta;
  double eps_score = 0, avg_prec = 0, avg_rec = 0;
  int effective_order = 0;
  for (const ChrfOrderStats& o : stats.orders) {
    const double prec = o.hyp > 0 ? double(o.match) / double(o.hyp) : eps;
    const double rec = o.ref > 0 ? double(o.match) / double(o.ref) : eps;
    const double denom = factor * prec + rec;
    eps_score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (o.hyp > 0 && o.ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (averaging == ChrfAveraging::eps_smoothing) return 100 * eps_score / k_chrf_char_order;
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0) return 0.0;
  // Same operation order as sacrebleu, so the last bits agree too.
  double score = (1 + factor) * avg_prec * avg_rec;
  score /= factor * avg_prec + avg_rec;
  return 100 * score;
}

ChrfScore corpus_chrf(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references) {
  check_parallel("chrF", hypotheses, references);
  ChrfScore s;
  std::vector<std::string> refs(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t k = 0; k < references.size(); ++k) refs[k] = references[k][i];
    s.stats += chrf_sentence_stats(hypotheses[i], refs);
  }
  s.score = chrf_f_score(s.stats);
  return s;
}

std::string format_chrf(const ChrfScore& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "chrF%d = %.2f", k_chrf_beta, s.score);
  return buf;
}

std::string chrf_signature(size_t num_refs) {
  return "nrefs:" + std::to_string(num_refs) + "|case:mixed|eff:yes|nc:6|nw:0|space:no|version:vkf";
}

}  // namespace vkf::model::eval
