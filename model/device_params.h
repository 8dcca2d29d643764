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
    // fp16 only: the fp16 gradients the backward's matmuls accumulate (the chunk's element
    // offsets, like the fp16 weights), drained into `grads` as each layer's backward ends.
    Buffer half_grads;
  };

  // max_chunk_bytes: 0 = the device's limit (tests force smaller chunks). In fp16 the fp32
  // masters (weight_chunks) are what the optimizer updates; the model reads their fp16 copies.
  DeviceParams(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes = 0,
               Precision precision = Precision::fp32);

  // The gradient the model's kernels accumulate into: of param_dtype(name).
  BufferRef grad(const std::string& name) const;
  // The fp32 gradient, what the optimizer reads (the embedding lookup's backward adds to it).
  BufferRef master_grad(const std::string& name) const;
  // fp16: records grads += half_grads, half_grads = 0 over the flat range [first, end) (nothing
  // in fp32).
  void drain_half_grads(Recorder& rec, uint64_t first, uint64_t end) const;
  const std::vector<Chunk>& chunks() const { return chunks_; }
  // Device bytes of everything training holds here: the weights (and fp16 copies), the
  // gradients (fp32, and fp16 in mixed precision) and Adam's moments.
  uint64_t state_bytes() const;

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
