#pragma once
// Parameters, gradients and Adam state of one replica, in ParamLayout order. Each is one flat
// device buffer where the device can bind that much (every GPU for the paper's models); where it
// cannot (lavapipe binds at most 128 MiB, some mobile drivers less), the flat range is cut into
// chunks at tensor boundaries, each its own buffer, and the optimizer and the gradient exchange
// work chunk by chunk. Every tensor lies in one chunk, so kernels see one binding per tensor.
#include <string>
#include <vector>

#include "engine/device.h"
#include "model/config.h"
#include "model/params.h"

namespace vkf::model {

class DeviceParams {
 public:
  struct Chunk {
    uint64_t first = 0;   // flat offset (floats) of the chunk's first element
    uint64_t floats = 0;  // elements, padding included
    Buffer params, grads, m, v;
  };

  // max_chunk_bytes: 0 = the device's limit (tests force smaller chunks).
  DeviceParams(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes = 0);

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  BufferRef param(const std::string& name) const { return slice(&Chunk::params, name); }
  BufferRef grad(const std::string& name) const { return slice(&Chunk::grads, name); }
  const std::vector<Chunk>& chunks() const { return chunks_; }

  void upload(const std::vector<float>& flat);
  std::vector<float> download() const;
  std::vector<float> download_grads() const;
  // Adam's first and second moments, for the optimizer-state file that makes a run resumable.
  void upload_moments(const std::vector<float>& m, const std::vector<float>& v);
  std::vector<float> download_m() const;
  std::vector<float> download_v() const;
  void zero_state();  // gradients and Adam moments
  void zero_grads();  // drops a partly accumulated step
  // False when a parameter (with `moments`, also an Adam moment) is NaN or Inf, or so large
  // that the sum of squares overflows fp32 (|w| around 1e19): one reduction on the device, used
  // when a checkpoint is loaded, so corrupt weights are refused instead of translated.
  bool all_finite(bool moments = false) const;

 private:
  BufferRef slice(Buffer Chunk::*which, const std::string& name) const;
  void upload_flat(Buffer Chunk::*which, const std::vector<float>& flat, const char* what);
  std::vector<float> download_flat(Buffer Chunk::*which) const;
  Device& dev_;
  ModelConfig config_;
  ParamLayout layout_;
  std::vector<Chunk> chunks_;
};

}  // namespace vkf::model
