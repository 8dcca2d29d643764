#pragma once
// Checkpoints as safetensors (docs/design.md): 8-byte little-endian header size, JSON header,
// raw little-endian tensors. `__metadata__` holds `config` (JSON string) and `step`. Files are
// written to a temporary name and renamed, so a crash never leaves half a checkpoint.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/params.h"

namespace vkf::model {

struct TensorRecord {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // numel floats
};

void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorRecord>& tensors);

// A whole safetensors file read and validated (offsets, sizes, dtypes); F32 tensors only.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::vector<int64_t>& shape(const std::string& name) const;
  const float* data(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
  };
  std::string path_;
  std::string bytes_;
  uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Entry> tensors_;
};

struct Checkpoint {
  ModelConfig config;
  uint64_t step = 0;
  std::vector<float> params;  // flat, in ParamLayout(config) order
};

void save_checkpoint(const std::string& path, const ModelConfig& config, const ParamLayout& layout,
                     const std::vector<float>& flat, uint64_t step);
Checkpoint load_checkpoint(const std::string& path);

// Throws a clear Error when `got` (from a checkpoint) differs from `want` in architecture or
// vocabulary.
void require_compatible(const ModelConfig& want, const ModelConfig& got, const std::string& what);

// A checkpoint file, or a directory meaning its latest checkpoint (highest step).
std::string resolve_checkpoint(const std::string& file_or_dir);
std::string checkpoint_name(uint64_t step);  // "checkpoint-<step>.safetensors"

}  // namespace vkf::model
