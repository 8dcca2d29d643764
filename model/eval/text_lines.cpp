#include "model/eval/text_lines.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/error.h"
#include "model/eval/utf8.h"

namespace vkf::model::eval {

namespace {

std::vector<std::string> read_all(LineReader& reader) {
  std::vector<std::string> lines;
  const std::string& name = reader.path();
  for (std::string_view line; reader.next(line);) {
    if (reader.too_long())
      throw Error(name + ":" + std::to_string(reader.line_number()) + ": longer than " +
                  std::to_string(reader.max_line_bytes()) + " bytes (--max-line-bytes)");
    if (size_t bad = find_invalid_utf8(line); bad != std::string::npos)
      throw Error(name + ":" + std::to_string(reader.line_number()) + ": invalid UTF-8 at byte " +
                  std::to_string(bad + 1) + " of the line");
    lines.emplace_back(line);
  }
  return lines;
}

}  // namespace

std::vector<std::string> read_text_lines(std::istream& in, const std::string& name,
                                         uint64_t max_line_bytes) {
  LineReader reader(in, name, {.max_line_bytes = max_line_bytes, .keep_cr = true});
  return read_all(reader);
}

std::vector<std::string> read_text_file(const std::string& path, uint64_t max_line_bytes) {
  if (path == "-") return read_text_lines(std::cin, "<stdin>", max_line_bytes);
  LineReader reader(path, {.max_line_bytes = max_line_bytes, .keep_cr = true});
  return read_all(reader);
}

}  // namespace vkf::model::eval
