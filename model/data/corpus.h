#pragma once
// Reading a parallel corpus for training: streams the pairs, skips (and counts, per reason) the
// ones no model should see, encodes the rest with the shared tokenizer into an ExampleStore.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/data/example_store.h"
#include "model/data/parallel_text.h"
#include "model/data/tokenizer.h"

namespace vkf::model {

enum class SkipReason { malformed_tsv, empty, invalid_utf8, too_long };
constexpr size_t k_skip_reasons = 4;
const char* describe(SkipReason reason);

struct CorpusReadOptions {
  // Longest sequence kept, in tokens as the model sees them: source pieces + EOS, and target
  // pieces + 1 (BOS before the decoder input, EOS after the target). A pair with either side
  // longer is skipped; the batcher's largest bucket must be at least this.
  int max_len = 256;
  // Lines longer than this (bytes) are skipped as too long without being held in memory.
  uint64_t max_line_bytes = k_default_max_line_bytes;

  void validate() const;
};

struct CorpusStats {
  int64_t pairs_read = 0;
  int64_t pairs_kept = 0;
  std::array<int64_t, k_skip_reasons> skipped{};
  std::array<int64_t, k_skip_reasons> first_line{};  // first line skipped for each reason

  int64_t skipped_total() const;
  int64_t count(SkipReason reason) const { return skipped[size_t(reason)]; }
  void record_skip(SkipReason reason, int64_t line);
  // One line per reason that occurred, e.g.
  // "skipped 3 of 1000 pairs (0.3%): empty source or target (first at line 17)".
  std::vector<std::string> summary() const;
};

// Never throws for a bad line (it is counted); throws vkf::Error for a missing file or two files
// of different lengths.
ExampleStore read_corpus(const CorpusFiles& files, const Tokenizer& tokenizer,
                         const CorpusReadOptions& options, CorpusStats& stats);

}  // namespace vkf::model
