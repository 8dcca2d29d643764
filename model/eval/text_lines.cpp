#include "model/eval/text_lines.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/error.h"
#include "model/eval/utf8.h"

namespace vkf::model::eval {

std::vector<std::string> read_text_lines(std::istream& in, const std::string& name) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (size_t bad = find_invalid_utf8(line); bad != std::string::npos)
      throw Error(name + ":" + std::to_string(lines.size() + 1) + ": invalid UTF-8 at byte " +
                  std::to_string(bad + 1) + " of the line");
    lines.push_back(std::move(line));
  }
  if (in.bad()) throw Error(name + ": read error after line " + std::to_string(lines.size()));
  return lines;
}

std::vector<std::string> read_text_file(const std::string& path) {
  if (path == "-") return read_text_lines(std::cin, "<stdin>");
  // A directory opens fine and then reads as nothing: refuse it instead of scoring 0 lines.
  if (std::filesystem::is_directory(path)) throw Error("cannot read " + path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + path + ": " + std::strerror(errno));
  return read_text_lines(in, path);
}

}  // namespace vkf::model::eval
