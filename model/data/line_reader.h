#pragma once
// LineReader: streams a text file one line at a time (never the whole file in memory), with the
// line terminator ("\n" or "\r\n") removed and the line number kept for messages.
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace vkf::model {

class LineReader {
 public:
  // Throws vkf::Error naming the path when it cannot be opened.
  explicit LineReader(std::string path);
  // False at end of file. The view stays valid until the next call. Throws on a read error.
  bool next(std::string_view& line);
  // 1-based number of the line last returned (0 before the first).
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::string buffer_;
  int64_t line_number_ = 0;
};

// True when the line holds only spaces, tabs and other ASCII whitespace.
bool is_blank(std::string_view line);

}  // namespace vkf::model
