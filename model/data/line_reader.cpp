#include "model/data/line_reader.h"

#include "engine/error.h"

namespace vkf::model {

LineReader::LineReader(std::string path) : path_(std::move(path)), in_(path_, std::ios::binary) {
  if (!in_) throw Error("cannot open " + path_);
}

bool LineReader::next(std::string_view& line) {
  if (!std::getline(in_, buffer_)) {
    if (in_.bad())
      throw Error("read error in " + path_ + " after line " + std::to_string(line_number_));
    return false;
  }
  ++line_number_;
  size_t size = buffer_.size();
  if (size > 0 && buffer_[size - 1] == '\r') --size;
  line = std::string_view(buffer_.data(), size);
  return true;
}

bool is_blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f') return false;
  return true;
}

}  // namespace vkf::model
