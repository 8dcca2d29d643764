#pragma once
// SHA-256 (FIPS 180-4), so a checkpoint can record which tokenizer file it was trained with and
// refuse another. Written here rather than linked because the model library carries no crypto
// dependency for one checksum.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace vkf::model {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // Pads, returns the digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> finish();

 private:
  void compress(const uint8_t* block);  // one 64-byte block
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> pending_{};
  size_t pending_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string to_hex(const std::array<uint8_t, 32>& digest);
std::string sha256_hex(std::string_view bytes);
// Streams the file; throws vkf::Error naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace vkf::model
