#include "model/data/corpus.h"

#include <cstdio>

#include "engine/error.h"
#include "model/data/line_reader.h"
#include "model/data/utf8.h"

namespace vkf::model {

const char* describe(SkipReason reason) {
  switch (reason) {
    case SkipReason::malformed_tsv:
      return "not two tab-separated fields";
    case SkipReason::empty:
      return "empty source or target";
    case SkipReason::invalid_utf8:
      return "invalid UTF-8";
    case SkipReason::too_long:
      return "over the length limit";
  }
  return "?";
}

void CorpusReadOptions::validate() const {
  if (max_len < 2)
    throw Error("invalid corpus options: max_len must be >= 2, got " + std::to_string(max_len));
  if (max_line_bytes < 1) throw Error("invalid corpus options: max_line_bytes must be >= 1");
}

int64_t CorpusStats::skipped_total() const {
  int64_t total = 0;
  for (int64_t n : skipped) total += n;
  return total;
}

void CorpusStats::record_skip(SkipReason reason, int64_t line) {
  auto i = size_t(reason);
  if (skipped[i]++ == 0) first_line[i] = line;
}

namespace {

// "12.5", "100", "<0.01": a share in percent without the exponent %g writes for 100 ("1e+02"),
// and never "100" for a share that is not all of them.
std::string percent(int64_t part, int64_t whole) {
  const double v = 100.0 * double(part) / double(whole);
  if (v < 0.01) return "<0.01";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  if (part < whole && std::string(text) == "100") return ">99.9";
  return text;
}

}  // namespace

std::vector<std::string> CorpusStats::summary() const {
  std::vector<std::string> lines;
  for (size_t i = 0; i < k_skip_reasons; ++i) {
    if (skipped[i] == 0) continue;
    char text[256];
    std::snprintf(text, sizeof text, "skipped %lld of %lld pairs (%s%%): %s (first at line %lld)",
                  static_cast<long long>(skipped[i]), static_cast<long long>(pairs_read),
                  percent(skipped[i], pairs_read).c_str(), describe(SkipReason(i)),
                  static_cast<long long>(first_line[i]));
    lines.emplace_back(text);
  }
  return lines;
}

namespace {

// A piece is at most a few dozen bytes, so a line this long cannot fit in max_len tokens:
// rejecting it before encoding keeps one runaway line (a log dump, a missing newline) from
// costing seconds and megabytes inside SentencePiece.
constexpr size_t k_max_bytes_per_token = 256;

}  // namespace

ExampleStore read_corpus(const CorpusFiles& files, const Tokenizer& tokenizer,
                         const CorpusReadOptions& options, CorpusStats& stats) {
  options.validate();
  stats = {};
  ExampleStore store;
  ParallelTextReader reader(files, options.max_line_bytes);
  const size_t max_pieces = size_t(options.max_len) - 1;  // room for bos/eos
  const size_t max_bytes = size_t(options.max_len) * k_max_bytes_per_token;
  std::vector<int32_t> source, target;
  RawPair pair;
  while (reader.next(pair)) {
    ++stats.pairs_read;
    if (pair.too_long) {
      stats.record_skip(SkipReason::too_long, pair.line);
      continue;
    }
    if (!pair.well_formed) {
      stats.record_skip(SkipReason::malformed_tsv, pair.line);
      continue;
    }
    if (is_blank(pair.source) || is_blank(pair.target)) {
      stats.record_skip(SkipReason::empty, pair.line);
      continue;
    }
    if (!is_valid_utf8(pair.source) || !is_valid_utf8(pair.target)) {
      stats.record_skip(SkipReason::invalid_utf8, pair.line);
      continue;
    }
    if (pair.source.size() > max_bytes || pair.target.size() > max_bytes) {
      stats.record_skip(SkipReason::too_long, pair.line);
      continue;
    }
    source.clear();
    target.clear();
    tokenizer.encode_append(pair.source, source);
    tokenizer.encode_append(pair.target, target);
    if (source.empty() || target.empty()) {  // e.g. only characters normalisation removes
      stats.record_skip(SkipReason::empty, pair.line);
      continue;
    }
    if (source.size() > max_pieces || target.size() > max_pieces) {
      stats.record_skip(SkipReason::too_long, pair.line);
      continue;
    }
    store.add(source, target, pair.line);
    ++stats.pairs_kept;
  }
  store.shrink_to_fit();
  return store;
}

}  // namespace vkf::model
