#pragma once
// Checkpoints as safetensors (docs/design.md): 8-byte little-endian header size, JSON header,
// raw little-endian tensors. `__metadata__` holds `config` (JSON string) and `step`. Files are
// written to a temporary name and renamed, so a crash never leaves half a checkpoint.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/params.h"
#include "model/safetensors.h"

namespace vkf::model {

struct Checkpoint {
  ModelConfig config;
  uint64_t step = 0;
  std::vector<float> params;  // flat, in ParamLayout(config) order
};

void save_checkpoint(const std::string& path, const ModelConfig& config, const ParamLayout& layout,
                     const std::vector<float>& flat, uint64_t step);
// Throws vkf::Error naming the file and what is wrong: not safetensors (see safetensors.h), no
// or a bad config, a bad step, a tensor the config does not imply or one it lacks, a wrong
// shape. The config and tensors are checked against each other before any parameter memory is
// reserved, so a lying header cannot make it allocate more than the file holds. Whether the
// weights are finite is checked where they reach a device (DeviceParams::count_nonfinite).
Checkpoint load_checkpoint(const std::string& path);
// The same, from a file already read (`file.path()` names it in messages).
Checkpoint checkpoint_from(const SafetensorsFile& file);

// Throws a clear Error when `got` (from a checkpoint) differs from `want` in architecture or
// vocabulary.
void require_compatible(const ModelConfig& want, const ModelConfig& got, const std::string& what);

// A checkpoint file, or a directory meaning its latest checkpoint (highest step).
std::string resolve_checkpoint(const std::string& file_or_dir);
// The checkpoint-<step>.safetensors files in `dir` as (step, path), by step; empty when `dir` is
// not a directory.
std::vector<std::pair<uint64_t, std::string>> list_checkpoints(const std::string& dir);
std::string checkpoint_name(uint64_t step);  // "checkpoint-<step>.safetensors"

// FNV-1a (64 bits) of the tensors' bytes in layout order, padding excluded, as 16 hex digits:
// the optimizer state records it to name the checkpoint it belongs to.
std::string params_checksum(const ParamLayout& layout, const std::vector<float>& flat);

// "tensor <name>, element <i> is nan" for the first NaN or Inf among the tensors (padding
// excluded), or nothing when all are finite. A host pass, for files that never reach a device
// (`vkf average`).
std::optional<std::string> first_nonfinite(const ParamLayout& layout,
                                           const std::vector<float>& flat);

}  // namespace vkf::model
