#pragma once
// Text in, text out: each input line is checked (invalid UTF-8 is reported and gives an empty
// output, the other lines are still translated), encoded with the shared SentencePiece model,
// translated, and its hypotheses decoded back to text. Empty lines give empty outputs.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/data/tokenizer.h"
#include "model/decode/translator.h"

namespace vkf::model::decode {

struct LineTranslation {
  struct Entry {
    std::string text;
    double score = 0;  // length-normalised log-probability
  };
  std::vector<Entry> nbest;  // best first; empty for an empty or invalid line
  bool invalid_utf8 = false;
  bool truncated = false;  // longer than the model's positions: only its start was translated
};

// translate_lines in two halves, around the translation itself (a host-driven TranslationJob):
// checks and encodes the lines, then turns the hypotheses into text.
struct PreparedLines {
  std::vector<LineTranslation> out;           // flags set, nbest still empty
  std::vector<std::vector<int32_t>> sources;  // empty for empty and invalid lines
};
PreparedLines prepare_lines(const Translator& translator, const Tokenizer& tokenizer,
                            const std::vector<std::string>& lines,
                            const std::function<void(uint64_t line_number)>& invalid = {});
std::vector<LineTranslation> finish_lines(PreparedLines&& prepared, const Tokenizer& tokenizer,
                                          const std::vector<std::vector<Hypothesis>>& found);

// `invalid(line_number)` (1-based) is called for each line that is not valid UTF-8.
std::vector<LineTranslation> translate_lines(
    Translator& translator, const Tokenizer& tokenizer, const std::vector<std::string>& lines,
    const std::function<void(uint64_t line_number)>& invalid = {},
    const std::function<void(uint64_t done)>& progress = {});

}  // namespace vkf::model::decode
