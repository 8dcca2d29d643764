#include "model/safetensors.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/json_limits.h"

namespace vkf::model {
namespace fs = std::filesystem;

namespace {

// The reference parser's limit: a header is a table of contents, never this large.
constexpr uint64_t k_max_header_bytes = 100'000'000;

uint64_t numel_of(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (auto d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorRecord>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t n = numel_of(t.shape);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + n * 4}}};
    offset += n * 4;
  }
  std::string text = header.dump();
  while ((text.size() + 8) % 8 != 0) text += ' ';  // keeps the tensor data 8-byte aligned
  const uint64_t header_size = text.size();

  AtomicFile out(path);
  out.write(&header_size, 8);  // little-endian hosts only
  out.write(text.data(), text.size());
  for (const auto& t : tensors) out.write(t.data, numel_of(t.shape) * 4);
  out.commit();
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw Error("cannot open " + path + ": " +
                (ec ? ec.message() : std::string("no such file or directory")));
  if (fs::is_directory(status)) throw Error(path + " is a directory, not a safetensors file");
  if (!fs::is_regular_file(status)) throw Error(path + " is not a regular file");
  bytes_ = read_whole_file(path, k_max_checkpoint_file_bytes);
  parse();
}

SafetensorsFile SafetensorsFile::from_bytes(std::string bytes, const std::string& name) {
  SafetensorsFile f;
  f.path_ = name;
  f.bytes_ = std::move(bytes);
  f.parse();
  return f;
}

void SafetensorsFile::parse() {
  auto bad = [&](const std::string& why) {
    return Error(path_ + " is not a valid safetensors file: " + why);
  };
  if (bytes_.size() < 8) throw bad("the file is only " + std::to_string(bytes_.size()) + " bytes");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes_.data(), 8);
  if (header_size < 2 || header_size > bytes_.size() - 8)
    throw bad("header size " + std::to_string(header_size) + " does not fit a file of " +
              std::to_string(bytes_.size()) + " bytes (truncated or another format)");
  if (header_size > k_max_header_bytes)
    throw bad("header of " + std::to_string(header_size) + " bytes (at most " +
              std::to_string(k_max_header_bytes) + ")");
  data_start_ = 8 + header_size;

  // Two tensors claiming one name are refused (nlohmann::json would keep the last); the depth and
  // the excerpt of a bad value are bounded (engine/json_limits.h).
  nlohmann::json header;
  try {
    header = parse_json(std::string_view(bytes_).substr(8, header_size), "the header",
                        {.reject_duplicate_keys = true});
  } catch (const Error& e) {
    throw bad(e.what());
  }
  if (!header.is_object()) throw bad("the header is not a JSON object");

  const uint64_t data_bytes = bytes_.size() - data_start_;
  for (auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw bad("__metadata__ is not an object");
      for (auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw bad("metadata '" + printable_excerpt(mk) + "' is not a string");
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string what = "tensor " + printable_excerpt(key);
    if (!value.is_object()) throw bad(what + " is not described by an object");
    const auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string()) throw bad(what + " has no dtype");
    if (dtype->get<std::string>() != "F32")
      throw bad(what + " has dtype " + printable_excerpt(dtype->get<std::string>()) +
                "; vkformer reads F32");
    const auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array()) throw bad(what + " has no shape list");
    Entry e;
    bool empty = false;
    uint64_t numel = 1;
    for (const auto& d : *shape) {
      // JSON parses 64 as unsigned, -1 as signed and 64.5 as a float: only the first is a size.
      if (!d.is_number_unsigned())
        throw bad(what + " has shape " + json_excerpt(*shape) +
                  ": dimensions must be non-negative integers");
      const uint64_t v = d.get<uint64_t>();
      if (v > uint64_t(std::numeric_limits<int64_t>::max()))
        throw bad(what + " has a dimension of " + std::to_string(v));
      e.shape.push_back(int64_t(v));
      if (v == 0) empty = true;
      if (!empty && __builtin_mul_overflow(numel, v, &numel))
        throw bad(what + " has shape " + json_excerpt(*shape) + ", more elements than 2^64");
    }
    e.numel = empty ? 0 : numel;
    if (e.numel > data_bytes / 4)
      throw bad(what + " has shape " + json_excerpt(*shape) + ": " + std::to_string(e.numel) +
                " floats, more than the file's " + std::to_string(data_bytes) + " data bytes");
    const auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      throw bad(what + " needs data_offsets [begin, end] of non-negative integers");
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    if (e.begin > e.end) throw bad(what + " has data_offsets that end before they begin");
    if (e.end > data_bytes)
      throw bad(what + " ends at byte " + std::to_string(e.end) + " but the file has " +
                std::to_string(data_bytes) + " data bytes (truncated)");
    if (e.end - e.begin != e.numel * 4)
      throw bad(what + " has " + std::to_string(e.end - e.begin) + " bytes but its shape " +
                json_excerpt(*shape) + " needs " + std::to_string(e.numel * 4));
    tensors_[key] = std::move(e);
  }

  // Every data byte belongs to exactly one tensor: in offset order each begins where the last
  // ended, and the last ends at the end of the file (the reference parser's rule).
  std::vector<std::tuple<uint64_t, uint64_t, const std::string*>> order;
  for (const auto& [name, e] : tensors_) order.emplace_back(e.begin, e.end, &name);
  std::sort(order.begin(), order.end());
  uint64_t expected = 0;
  for (const auto& [begin, end, name] : order) {
    if (begin != expected)
      throw bad("tensor " + *name + " begins at byte " + std::to_string(begin) +
                " but the tensor before it ends at byte " + std::to_string(expected) +
                (begin < expected ? " (overlapping tensors)" : " (a gap)"));
    expected = end;
  }
  if (expected != data_bytes)
    throw bad("the tensors end at byte " + std::to_string(expected) + " of " +
              std::to_string(data_bytes) + " data bytes (trailing bytes)");
}

const std::vector<int64_t>& SafetensorsFile::shape(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + " has no tensor " + name);
  return it->second.shape;
}

uint64_t SafetensorsFile::numel(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + " has no tensor " + name);
  return it->second.numel;
}

void SafetensorsFile::copy(const std::string& name, float* out) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + " has no tensor " + name);
  if (it->second.numel)
    std::memcpy(out, bytes_.data() + data_start_ + it->second.begin, it->second.numel * 4);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : tensors_) out.push_back(k);
  return out;
}

std::optional<uint64_t> parse_decimal_u64(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  for (char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  uint64_t v = 0;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (err != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace vkf::model
