#include "model/data/line_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/error.h"
#include "engine/stop_request.h"

namespace vkf::model {
namespace {

// A line this long is not text (/dev/zero, a disk image): reading on to its end, however far,
// is refused. Above any cap --max-line-bytes gives that still skips (translate's input may hold a
// 200 MB line, skipped), and read through in about a second.
constexpr uint64_t k_min_line_without_end = uint64_t(256) << 20;

}  // namespace

LineReader::LineReader(std::string path, LineReaderOptions options)
    : path_(std::move(path)), options_(options) {
  std::error_code ec;
  // A directory opens as a stream and fails on the first read with a libstdc++ message that
  // names no file; say it plainly here.
  if (std::filesystem::is_directory(path_, ec))
    throw Error("cannot read " + path_ + ": it is a directory");
  file_ = std::make_unique<std::ifstream>(path_, std::ios::binary);
  if (!*file_) throw Error("cannot open " + path_ + ": " + std::strerror(errno));
  in_ = file_.get();
}

LineReader::LineReader(std::istream& in, std::string name, LineReaderOptions options)
    : path_(std::move(name)), options_(options), in_(&in) {}

bool LineReader::next(std::string_view& line) {
  buffer_.clear();
  too_long_ = false;
  bool any = false;
  uint64_t bytes = 0;
  const uint64_t without_end = std::max(k_min_line_without_end, 2 * options_.max_line_bytes);
  try {
    std::streambuf* sb = in_->rdbuf();
    const auto cap = options_.max_line_bytes;
    // A stop request (engine/stop_request.h) is seen every 64 KiB, also inside a line without
    // end (/dev/zero) and in an endless stream.
    uint32_t until_check = 1u << 16;
    for (int c = sb->sbumpc(); c != std::char_traits<char>::eof(); c = sb->sbumpc()) {
      any = true;
      if (--until_check == 0) {
        until_check = 1u << 16;
        if (stop_requested()) throw_stop();
      }
      if (c == '\n') break;
      if (++bytes > without_end) break;
      if (too_long_) continue;
      if (buffer_.size() >= cap) {
        too_long_ = true;
        std::string().swap(buffer_);  // give the memory back while the rest is skipped
        if (options_.on_too_long) options_.on_too_long(line_number_ + 1);
        continue;
      }
      buffer_.push_back(char(c));
    }
  } catch (const StopRequested&) {
    throw;
  } catch (const std::exception& e) {
    // libstdc++'s filebuf throws on a read error (EIO, a directory given as stdin).
    throw Error("read error in " + path_ + " after line " + std::to_string(line_number_) + ": " +
                e.what());
  }
  if (stop_requested()) throw_stop();
  if (bytes > without_end)
    throw Error("line " + std::to_string(line_number_ + 1) + " of " + path_ + " is longer than " +
                format_bytes(without_end) + " without a newline: not a text file");
  if (!any) return false;
  ++line_number_;
  size_t size = buffer_.size();
  if (!options_.keep_cr && size > 0 && buffer_[size - 1] == '\r') --size;
  line = std::string_view(buffer_.data(), size);
  return true;
}

void LineReader::throw_stop() const {
  throw_if_stop_requested("reading " + path_ + " (line " + std::to_string(line_number_ + 1) + ")");
}

bool is_blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f') return false;
  return true;
}

}  // namespace vkf::model
