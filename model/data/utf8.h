#pragma once
// Strict UTF-8 (RFC 3629 / Unicode 3.9 D92, as Python's strict codec): the one validator and
// decoder that corpus lines, the tokenizer, the scorer and the evaluation metrics share.
// SentencePiece would silently mangle invalid bytes, and a corpus with mojibake is better
// skipped (and counted) than learned.
#include <cstddef>
#include <string_view>

namespace vkf::model {

// Decodes the code point starting at text[pos] into `cp`; returns its length in bytes, or 0 when
// the sequence there is malformed: an overlong form, a UTF-16 surrogate (U+D800..U+DFFF),
// something above U+10FFFF, a stray continuation byte or a truncated sequence.
size_t decode_utf8_at(std::string_view text, size_t pos, char32_t& cp);

// Byte offset of the first malformed sequence, or std::string_view::npos when `text` is valid.
size_t find_invalid_utf8(std::string_view text);

// True when `text` is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view text) {
  return find_invalid_utf8(text) == std::string_view::npos;
}

}  // namespace vkf::model
