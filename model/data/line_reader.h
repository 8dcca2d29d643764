#pragma once
// LineReader: streams a text file (or any stream, such as stdin) one line at a time, never the
// whole file in memory, with the line number kept for messages. A line ends at '\n' (removed);
// a last line without one still counts; a '\r' before the '\n' is removed unless asked to keep
// it. A line longer than the cap is read through and dropped, never held: a file without
// newlines (a binary file, /dev/zero) costs the cap in memory, not its size.
#include <cstdint>
#include <fstream>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <string_view>

namespace vkf::model {

// 1 MiB: a thousand times the longest sentence of any corpus used here, far above what any
// model's max_len can take, and small enough for any machine.
constexpr uint64_t k_default_max_line_bytes = uint64_t(1) << 20;

struct LineReaderOptions {
  uint64_t max_line_bytes = k_default_max_line_bytes;
  bool keep_cr = false;  // sacreBLEU keeps a '\r' for its own rstrip
  // Called with the line's number as soon as a line passes the cap, before the rest of it is
  // read (a line without end, such as /dev/zero, is then reported at once, not never).
  std::function<void(int64_t line)> on_too_long;
};

class LineReader {
 public:
  // Throws vkf::Error naming the path when it cannot be opened or is a directory.
  explicit LineReader(std::string path, LineReaderOptions options = {});
  // Reads `in` (not owned), named `name` in messages.
  LineReader(std::istream& in, std::string name, LineReaderOptions options = {});
  // False at end of file. The view stays valid until the next call. A line over the cap comes
  // back empty with too_long() true. Throws vkf::Error on a read error.
  bool next(std::string_view& line);
  // Whether the line last returned was over the cap (and so came back empty).
  bool too_long() const { return too_long_; }
  // Throws StopRequested (engine/stop_request.h) once a stop was requested: reading is the
  // first phase of a training, and honours the first Ctrl-C.
  // 1-based number of the line last returned (0 before the first).
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  uint64_t max_line_bytes() const { return options_.max_line_bytes; }

 private:
  void throw_stop() const;
  std::string path_;
  LineReaderOptions options_;
  std::unique_ptr<std::ifstream> file_;
  std::istream* in_ = nullptr;
  std::string buffer_;
  int64_t line_number_ = 0;
  bool too_long_ = false;
};

// True when the line holds only spaces, tabs and other ASCII whitespace.
bool is_blank(std::string_view line);

}  // namespace vkf::model
