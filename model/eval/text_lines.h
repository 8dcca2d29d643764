#pragma once
// Reading a text corpus the way sacreBLEU does (Python open(..., encoding='utf-8',
// newline='\n')): lines end at '\n' only, the '\n' is dropped, a last line without one still
// counts, and anything else ('\r' included) stays for the metric's own rstrip.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "model/data/line_reader.h"

namespace vkf::model::eval {

// Throws vkf::Error naming `name` and the line number on invalid UTF-8 and on a line longer
// than `max_line_bytes` (a metric must see every line, so neither is skipped).
std::vector<std::string> read_text_lines(std::istream& in, const std::string& name,
                                         uint64_t max_line_bytes = k_default_max_line_bytes);

// "-" reads standard input. Throws vkf::Error when the file cannot be opened or read.
std::vector<std::string> read_text_file(const std::string& path,
                                        uint64_t max_line_bytes = k_default_max_line_bytes);

}  // namespace vkf::model::eval
