#pragma once
// UTF-8 helpers for the evaluation metrics. sacreBLEU works on Python str, so "character" means
// code point and "whitespace" means what Python's str.split() splits on; these helpers give
// the same answers on UTF-8 bytes.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/data/utf8.h"

namespace vkf::model::eval {

// The validator is model/data/utf8.h's, shared with the corpus readers.
using model::find_invalid_utf8;

// Code points of `text`; throws vkf::Error naming `what` and the byte offset when invalid.
std::u32string decode_utf8(std::string_view text, std::string_view what);

// Python's str.isspace(): \t \n \v \f \r, U+001C..U+001F, space, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_python_space(char32_t c);

// Python's str.split() without arguments: fields between runs of whitespace, none empty.
// Malformed bytes are kept inside fields (callers validate first).
std::vector<std::string_view> split_python_whitespace(std::string_view text);

// Python's str.rstrip() without arguments.
std::string_view rstrip_python_whitespace(std::string_view text);

}  // namespace vkf::model::eval
