#pragma once
// Tokenizer: one SentencePiece BPE model shared by source and target (docs/design.md). Wraps
// training, loading, encode/decode and the checksum a checkpoint records to refuse a model trained
// with another vocabulary.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/data/special_ids.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace vkf::model {

// Default vocabulary sizes. The paper used ~37,000 shared BPE pieces for 4.5M WMT en-de pairs.
// Smaller corpora want fewer pieces: every piece needs enough occurrences for its embedding to be
// learned, and low-resource NMT studies (Sennrich & Zhang 2019; Gowda & May 2020) find the best
// BLEU with vocabularies of a few thousand pieces at 100k-200k pairs, rising slowly with data.
// The Debian corpus (~150k pairs, ~2-3M words a side) gets 8000: frequent German compounds and
// English words stay whole, rare ones split into a handful of pieces, and nearly every piece is
// seen hundreds of times. The bundled sample (a few thousand pairs, ~100k words in all) gets 2000:
// with more, most pieces would be whole words seen once or twice (memorised, not learned), and
// a smaller softmax keeps the demo fast.
constexpr int k_default_vocab_size = 8000;
constexpr int k_sample_vocab_size = 2000;

struct TokenizerTrainOptions {
  // Plain-text files, one sentence per line; pass both sides for one shared model.
  std::vector<std::string> inputs;
  // Where the .model file goes (the exact path; no .vocab file is written).
  std::string output_path;
  int vocab_size = k_default_vocab_size;
  // Cap on training sentences: above it SentencePiece reservoir-samples this many lines, so a
  // large corpus trains in bounded time and memory. 2M sentences is ~1M pairs, far more than a
  // BPE vocabulary of this size needs to settle.
  int64_t max_sentences = 2'000'000;
  // Seeds SentencePiece's sampler: the same inputs and seed give the same model file.
  uint32_t seed = 1;
  // Fraction of characters the vocabulary must cover; the rest map to unk. Slightly below 1 so
  // stray symbols from a few lines (CJK in a man page) do not claim vocabulary slots.
  double character_coverage = 0.9999;
  int threads = 1;
  // Longer lines are skipped (never held in memory).
  uint64_t max_line_bytes = uint64_t(1) << 20;
  // Keep SentencePiece's progress log off stderr.
  bool quiet = true;
  SpecialIds ids;

  // Throws vkf::Error naming the bad field.
  void validate() const;
};

class Tokenizer {
 public:
  // Trains and writes options.output_path (atomically: a temporary file renamed into place).
  static void train(const TokenizerTrainOptions& options);
  // Throws vkf::Error when the file is missing, unreadable or not a SentencePiece model, or when
  // the model lacks one of the pad/unk/bos/eos pieces.
  static Tokenizer load(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Pieces only: no bos/eos (the batcher adds them where design.md's token conventions say).
  std::vector<int32_t> encode(std::string_view text) const;
  // Appends to `ids` (avoids a temporary per line when filling a corpus).
  void encode_append(std::string_view text, std::vector<int32_t>& ids) const;
  std::vector<std::string> encode_pieces(std::string_view text) const;
  // Ignores pad/bos/eos; throws vkf::Error on ids outside the vocabulary.
  std::string decode(std::span<const int32_t> ids) const;

  int vocab_size() const;
  const SpecialIds& ids() const { return ids_; }
  std::string piece(int32_t id) const;
  const std::string& path() const { return path_; }
  // Hex SHA-256 of the model file's bytes, recorded in the checkpoint config.
  const std::string& sha256() const { return sha256_; }

 private:
  Tokenizer() = default;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  SpecialIds ids_;
  std::string path_;
  std::string sha256_;
};

}  // namespace vkf::model
