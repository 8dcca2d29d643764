// BLEU as sacrebleu 2.x computes it (sacrebleu/metrics/bleu.py: extract_all_word_ngrams,
// BLEU._compute_segment_statistics, BLEU._get_closest_ref_len, BLEU.compute_bleu).
#include "model/eval/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "engine/error.h"
#include "model/eval/parallel.h"
#include "model/eval/tokenize_13a.h"
#include "model/eval/utf8.h"

namespace vkf::model::eval {
namespace {

using NgramCounts = std::unordered_map<std::string_view, int64_t>;

// Sentence preprocessing: BLEU._preprocess_segment is tokenizer(sent.rstrip()).
std::string preprocess(const std::string& sentence) {
  return tokenize_13a(rstrip_python_whitespace(sentence));
}

// All n-grams of orders 1..4 of a tokenized line. Tokens are joined by single spaces and hold no
// whitespace, so an n-gram is exactly the substring spanning its tokens: the views point into
// `tokenized`, which must outlive the map. Returns the token count.
int64_t count_ngrams(const std::string& tokenized, NgramCounts& counts) {
  std::vector<std::string_view> tokens = split_python_whitespace(tokenized);
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  for (int64_t i = 0; i < n_tokens; ++i) {
    for (int64_t n = 1; n <= k_bleu_max_order && i + n <= n_tokens; ++n) {
      const char* begin = tokens[i].data();
      const char* end = tokens[i + n - 1].data() + tokens[i + n - 1].size();
      ++counts[std::string_view(begin, static_cast<size_t>(end - begin))];
    }
  }
  return n_tokens;
}

int order_of(std::string_view ngram) {
  return 1 + static_cast<int>(std::count(ngram.begin(), ngram.end(), ' '));
}

// The reference length closest to the hypothesis length; the shorter one on a tie.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best = -1, best_diff = -1;
  for (int64_t len : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - len);
    if (best_diff == -1 || diff < best_diff || (diff == best_diff && len < best)) {
      best_diff = diff;
      best = len;
    }
  }
  return best;
}

// sacrebleu's my_log: log(0) is a large negative number, so a zero precision gives BLEU 0.
double my_log(double x) {
  return x == 0.0 ? -9999999999.0 : std::log(x);
}

}  // namespace

BleuStats& BleuStats::operator+=(const BleuStats& o) {
  hyp_len += o.hyp_len;
  ref_len += o.ref_len;
  for (int n = 0; n < k_bleu_max_order; ++n) {
    correct[n] += o.correct[n];
    total[n] += o.total[n];
  }
  return *this;
}

BleuStats bleu_sentence_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references) {
  // Multiple references: each n-gram may match up to its largest count in any one reference.
  std::vector<std::string> ref_tokens;
  ref_tokens.reserve(references.size());
  for (const std::string& ref : references) ref_tokens.push_back(preprocess(ref));
  NgramCounts ref_max;
  std::vector<int64_t> ref_lens;
  for (const std::string& tokenized : ref_tokens) {
    NgramCounts counts;
    ref_lens.push_back(count_ngrams(tokenized, counts));
    for (const auto& [ngram, count] : counts) ref_max[ngram] = std::max(ref_max[ngram], count);
  }

  const std::string hyp_tokens = preprocess(hypothesis);
  NgramCounts hyp_counts;
  BleuStats stats;
  stats.hyp_len = count_ngrams(hyp_tokens, hyp_counts);
  stats.ref_len = closest_ref_len(stats.hyp_len, ref_lens);
  for (const auto& [ngram, count] : hyp_counts) {
    const int n = order_of(ngram) - 1;
    stats.total[n] += count;
    if (auto it = ref_max.find(ngram); it != ref_max.end())
      stats.correct[n] += std::min(count, it->second);
  }
  return stats;
}

BleuScore bleu_from_stats(const BleuStats& stats) {
  BleuScore s;
  s.stats = stats;
  const double sys_len = double(stats.hyp_len), ref_len = double(stats.ref_len);
  // Brevity penalty exp(1 - r/c) when c < r; 0 for an empty hypothesis corpus.
  s.bp = stats.hyp_len >= stats.ref_len ? 1.0
         : stats.hyp_len > 0            ? std::exp(1.0 - ref_len / sys_len)
                                        : 0.0;
  s.ratio = stats.ref_len > 0 ? sys_len / ref_len : 0.0;
  // No match at any order: sacrebleu stops early with score 0 and all precisions 0 (#141).
  if (std::all_of(stats.correct.begin(), stats.correct.end(), [](int64_t c) { return c == 0; }))
    return s;
  // 'exp' smoothing (sacrebleu compute_bleu, after mteval-v13a's smoothing): the k-th order
  // (k = 1, 2, ...) that has n-grams but no match gets precision 100 / (2^k * total[n]). An
  // order with no hypothesis n-grams at all stops the loop and keeps precision 0, which
  // my_log turns into BLEU 0 (no effective-order rescue at corpus level).
  double smooth_mteval = 1.0;
  for (int n = 0; n < k_bleu_max_order; ++n) {
    if (stats.total[n] == 0) break;
    if (stats.correct[n] == 0) {
      smooth_mteval *= 2;
      s.precisions[n] = 100.0 / (smooth_mteval * double(stats.total[n]));
    } else {
      s.precisions[n] = 100.0 * double(stats.correct[n]) / double(stats.total[n]);
    }
  }
  double log_sum = 0;  // summed in order, like Python's sum() over the list
  for (double p : s.precisions) log_sum += my_log(p);
  s.score = s.bp * std::exp(log_sum / k_bleu_max_order);
  return s;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references) {
  check_parallel("BLEU", hypotheses, references);
  BleuStats total;
  std::vector<std::string> refs(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t k = 0; k < references.size(); ++k) refs[k] = references[k][i];
    total += bleu_sentence_stats(hypotheses[i], refs);
  }
  return bleu_from_stats(total);
}

std::string format_bleu_details(const BleuScore& s) {
  // Python's f"{x:.1f}" and printf's %.1f both round the exact binary value correctly.
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)",
                s.precisions[0], s.precisions[1], s.precisions[2], s.precisions[3], s.bp, s.ratio,
                static_cast<long long>(s.stats.hyp_len), static_cast<long long>(s.stats.ref_len));
  return buf;
}

std::string format_bleu(const BleuScore& s) {
  char score[32];
  std::snprintf(score, sizeof score, "%.2f", s.score);
  return "BLEU = " + std::string(score) + " " + format_bleu_details(s);
}

std::string bleu_signature(size_t num_refs) {
  return "nrefs:" + std::to_string(num_refs) + "|case:mixed|eff:no|tok:13a|smooth:exp|version:vkf";
}

}  // namespace vkf::model::eval
