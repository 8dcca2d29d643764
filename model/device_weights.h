#pragma once
// The model's parameters on a device, read-only: all that inference (translating, scoring)
// needs. One flat device buffer in ParamLayout order where the device can bind that much (every
// GPU for the paper's models); where it cannot (lavapipe binds at most 128 MiB, some mobile
// drivers less), the flat range is cut into chunks at tensor boundaries, each its own buffer.
// Every tensor lies in one chunk, so kernels see one binding per tensor. Training adds its
// gradients and Adam moments beside these (DeviceParams, model/device_params.h).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/adam.h"
#include "model/config.h"
#include "model/params.h"

namespace vkf::model {

class DeviceWeights {
 public:
  struct Chunk {
    uint64_t first = 0;   // flat offset (floats) of the chunk's first element
    uint64_t floats = 0;  // elements, padding included
    Buffer params;
  };

  // max_chunk_bytes: 0 = the device's limit (tests force smaller chunks).
  DeviceWeights(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes = 0);
  virtual ~DeviceWeights();
  DeviceWeights(const DeviceWeights&) = delete;
  DeviceWeights& operator=(const DeviceWeights&) = delete;

  Device& device() const { return dev_; }
  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  BufferRef param(const std::string& name) const;
  const std::vector<Chunk>& weight_chunks() const { return weights_; }
  // Device bytes the weights take (chunks rounded as allocated).
  uint64_t bytes() const;

  void upload(const std::vector<float>& flat);
  // upload(), then refuse (vkf::Error naming `source`) weights that are NaN, Inf or so large that
  // their sum of squares overflows fp32 (|w| around 1e19): a corrupt file or a diverged run,
  // whose translations and scores would be garbage. Every checkpoint loaded for inference
  // comes through here.
  void upload_checked(const std::vector<float>& flat, const std::string& source);
  std::vector<float> download() const;
  // False when a weight is NaN, Inf or absurdly large (above): one reduction on the device.
  bool all_finite() const;

 protected:
  // The chunk holding flat offset `offset`.
  size_t chunk_of(uint64_t offset) const;
  void check_flat(const std::vector<float>& flat, const char* what) const;
  // True when no element of these buffers is NaN or Inf and their sum of squares is finite.
  bool spans_finite(std::vector<ops::GradSpan> spans) const;

  Device& dev_;
  ModelConfig config_;
  ParamLayout layout_;
  std::vector<Chunk> weights_;
};

}  // namespace vkf::model
