#pragma once
// The model's parameters on a device, read-only: all that inference (translating, scoring)
// needs. One flat device buffer in ParamLayout order where the device can bind that much (every
// GPU for the paper's models); where it cannot (lavapipe binds at most 128 MiB, some mobile
// drivers less), the flat range is cut into chunks at tensor boundaries, each its own buffer.
// Every tensor lies in one chunk, so kernels see one binding per tensor. Training adds its
// gradients and Adam moments beside these (DeviceParams, model/device_params.h).
//
// In Precision::fp16 (issue 15) the tensors the matmuls and the embedding lookup read (every
// projection's weight and bias, the shared embedding) are held as fp16, in chunks cut like the
// fp32 ones and at the same element offsets (so one cast per chunk makes them); the LayerNorm
// gains and biases and learned positions stay fp32, as the kernels read them (they are tiny, and
// LayerNorm's statistics are fp32 anyway). For inference only those are held: the weights take
// half the memory. Training (DeviceParams) keeps every tensor's fp32 master as well and casts
// the masters to the fp16 copies after each optimizer step (refresh_halves).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/adam.h"
#include "engine/recorder.h"
#include "model/config.h"
#include "model/params.h"
#include "model/precision.h"

namespace vkf::model {

class DeviceWeights {
 public:
  struct Chunk {
    uint64_t first = 0;   // flat offset (floats) of the chunk's first element
    uint64_t floats = 0;  // elements, padding included
    Buffer params;
  };

  // max_chunk_bytes: 0 = the device's limit (tests force smaller chunks). fp16 needs a device
  // with 16-bit storage buffers and a storage-buffer offset alignment of at most 128 bytes (every
  // desktop driver): the fp16 tensors start at multiples of 64 halves.
  DeviceWeights(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes = 0,
                Precision precision = Precision::fp32);
  virtual ~DeviceWeights();
  DeviceWeights(const DeviceWeights&) = delete;
  DeviceWeights& operator=(const DeviceWeights&) = delete;

  Device& device() const { return dev_; }
  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  Precision precision() const { return precision_; }
  // The storage type of the activations the model's kernels run with over these weights.
  DType activation_dtype() const { return model::activation_dtype(precision_); }
  // The tensor as the model's kernels read it: of param_dtype(name).
  BufferRef param(const std::string& name) const;
  DType param_dtype(const std::string& name) const;
  // fp32 chunks in flat order: every tensor in fp32, or (fp16 training) the masters; empty for
  // fp16 inference.
  const std::vector<Chunk>& weight_chunks() const { return weights_; }
  // The fp16 chunks (Chunk::floats counts halves); empty in fp32.
  const std::vector<Chunk>& half_chunks() const { return halves_; }
  // Device bytes the weights take (chunks rounded as allocated).
  uint64_t bytes() const;
  // Records the casts of the fp32 masters to the fp16 copies (fp16 training; nothing otherwise).
  void refresh_halves(Recorder& rec) const;

  void upload(const std::vector<float>& flat);
  // upload(), then refuse (vkf::Error naming `source`) weights that are NaN, Inf or so large that
  // their sum of squares overflows fp32 (|w| around 1e19): a corrupt file or a diverged run,
  // whose translations and scores would be garbage. Every checkpoint loaded for inference
  // comes through here.
  void upload_checked(const std::vector<float>& flat, const std::string& source);
  std::vector<float> download() const;
  // False when a weight is NaN, Inf or absurdly large (above): one reduction on the device.
  bool all_finite() const;

  // Whether the tensor `name` is held in fp16 under Precision::fp16 (not the LayerNorm
  // parameters, not learned positions).
  static bool half_in_fp16(const std::string& name);

 protected:
  // masters: keep every tensor's fp32 copy beside the fp16 ones (training).
  DeviceWeights(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes,
                Precision precision, bool masters);
  // The chunk holding flat offset `offset`.
  size_t chunk_of(uint64_t offset) const;
  void check_flat(const std::vector<float>& flat, const char* what) const;
  // True when no element of these buffers is NaN or Inf and their sum of squares is finite.
  bool spans_finite(std::vector<ops::GradSpan> spans) const;

  // The fp16 chunks cast to a temporary fp32 buffer each, for a check or a download.
  template <typename F>
  void each_half_as_f32(F&& use) const;

  Device& dev_;
  ModelConfig config_;
  ParamLayout layout_;
  Precision precision_;
  std::vector<Chunk> weights_;
  std::vector<Chunk> halves_;
  std::map<std::string, Buffer> kept_;  // fp16 inference: the fp32 tensors, each on its own
};

}  // namespace vkf::model
