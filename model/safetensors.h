#pragma once
// safetensors files (the checkpoint format, docs/design.md "Contracts"): 8-byte little-endian
// header size, a JSON header, raw little-endian tensor bytes. Reading follows the reference
// parser's rules, so a file is accepted only when every byte is accounted for: tensor data_offsets
// are contiguous, in order, non-overlapping and cover the data exactly; shapes are lists of
// non-negative integers whose product matches the byte count; names are unique. Writing goes to
// a temporary file and is renamed into place (engine/file_io.h), so a crash never leaves half a
// file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/file_io.h"

namespace vkf::model {

struct TensorRecord {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // numel floats
};

// Throws vkf::Error when the file cannot be written completely (disk full, no permission); the
// temporary file is removed then.
void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorRecord>& tensors);

// A whole safetensors file read and validated; F32 tensors only.
class SafetensorsFile {
 public:
  // Reads `path` (a regular file); throws vkf::Error naming it and what is wrong.
  explicit SafetensorsFile(const std::string& path);
  // Parses bytes already in memory; `name` stands for the file in messages (fuzzing, tests).
  static SafetensorsFile from_bytes(std::string bytes, const std::string& name);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::vector<int64_t>& shape(const std::string& name) const;
  uint64_t numel(const std::string& name) const;
  // Copies the tensor's floats to `out` (numel floats). The data may sit at any byte offset in
  // the file (the header size need not be a multiple of 4), so it is copied, never cast.
  void copy(const std::string& name, float* out) const;
  std::vector<std::string> names() const;
  uint64_t data_bytes() const { return bytes_.size() - data_start_; }

 private:
  SafetensorsFile() = default;
  void parse();
  struct Entry {
    std::vector<int64_t> shape;
    uint64_t numel = 0;
    uint64_t begin = 0, end = 0;
  };
  std::string path_;
  std::string bytes_;
  uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Entry> tensors_;
};

// A metadata value as a plain decimal number: digits only (no sign, space or exponent), at most
// 2^64 - 1. std::stoull would take "-1" as 2^64 - 1.
std::optional<uint64_t> parse_decimal_u64(std::string_view text);

// engine/file_io.h: removes the temporary files that killed writers left.
using ::vkf::remove_stale_temporaries;

}  // namespace vkf::model
