#pragma once
// What training holds on a device: the weights (DeviceWeights, model/device_weights.h) plus, per
// weight chunk, the gradients and Adam's two moments, so the optimizer and the gradient exchange
// work chunk by chunk. Inference takes the weights alone, a quarter of this.
#include <string>
#include <vector>

#include "engine/device.h"
#include "model/config.h"
#include "model/device_weights.h"
#include "model/params.h"

namespace vkf::model {

class DeviceParams : public DeviceWeights {
 public:
  struct Chunk {
    uint64_t first = 0;   // flat offset (floats) of the chunk's first element
    uint64_t floats = 0;  // elements, padding included
    BufferRef params;     // the weight chunk's buffer
    Buffer grads, m, v;
  };

  // max_chunk_bytes: 0 = the device's limit (tests force smaller chunks). In fp16 the fp32
  // masters (weight_chunks) are what the optimizer updates; the model reads their fp16 copies.
  DeviceParams(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes = 0,
               Precision precision = Precision::fp32);

  BufferRef grad(const std::string& name) const;
  const std::vector<Chunk>& chunks() const { return chunks_; }

  std::vector<float> download_grads() const;
  // Adam's first and second moments, for the optimizer-state file that makes a run resumable.
  void upload_moments(const std::vector<float>& m, const std::vector<float>& v);
  std::vector<float> download_m() const;
  std::vector<float> download_v() const;
  void zero_state();  // gradients and Adam moments
  void zero_grads();  // drops a partly accumulated step
  // DeviceWeights::all_finite, with `moments` also over Adam's moments (checked on --resume).
  bool all_finite(bool moments = false) const;

 private:
  void upload_flat(Buffer Chunk::*which, const std::vector<float>& flat, const char* what);
  std::vector<float> download_flat(Buffer Chunk::*which) const;
  std::vector<Chunk> chunks_;
};

}  // namespace vkf::model
