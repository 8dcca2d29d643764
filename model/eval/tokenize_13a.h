#pragma once
// sacreBLEU's default BLEU tokenizer, "13a" (mteval-v13a.pl as rewritten in sacrebleu's
// tokenizers/tokenizer_13a.py), reproduced byte for byte.
#include <string>
#include <string_view>

namespace vkf::model::eval {

// Tokens of `line` joined by single spaces, exactly as sacrebleu's Tokenizer13a()(line):
// drops "<skipped>", joins "-\n", turns "\n" into a space, unescapes &quot; &amp; &lt; &gt;
// (in that order, once each), splits off ASCII punctuation except ' - . , then splits '.' and
// ',' unless between digits, and '-' after a digit. No lowercasing, no rstrip (BLEU does that).
std::string tokenize_13a(std::string_view line);

}  // namespace vkf::model::eval
