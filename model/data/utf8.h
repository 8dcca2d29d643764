#pragma once
// Strict UTF-8 validation for corpus lines: SentencePiece would silently mangle invalid bytes, and
// a corpus with mojibake is better skipped (and counted) than learned.
#include <string_view>

namespace vkf::model {

// True when `text` is well-formed UTF-8 per RFC 3629 / Unicode 3.9 D92: no overlong forms, no
// UTF-16 surrogates (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequences.
bool is_valid_utf8(std::string_view text);

}  // namespace vkf::model
