#pragma once
// The op problems a model runs, stated by the model itself: its Linears' matmuls as its layers
// record them (model/layers.h), its attention, LayerNorm, loss, Adam and the beam search's
// top-k. The tuner searches exactly these (`vkf tune --preset`, `--tune auto`'s first run,
// vkf::Translator's tuning), so a change to how the model runs an op changes what is tuned.
#include <cstdint>

#include "engine/device_info.h"
#include "engine/ops/op_problems.h"
#include "model/config.h"

namespace vkf::model {

// What a model runs: `tokens` rows a step (a batch), sentences of `len` tokens, training
// (forward and backward) or translating (forward; the decoder's one-row attention steps run
// fixed tiles and are not searched), in `dtype` storage.
struct ModelWork {
  uint32_t tokens = 0;
  // A typical sentence: the attention kernels' shape classes bucket the length, so one length
  // stands for a batch's.
  uint32_t len = 32;
  bool training = true;
  DType dtype = DType::f32;
  // Decoding: the beam search's top-k over the vocabulary each step, at beam x sentences rows
  // (0: none; it runs on fp32 log-probabilities whatever the storage).
  uint32_t beam = 0, sentences = 0;
};

// What training runs: batches of up to `max_tokens` rows a side, of which 4096 stand for more
// (larger batches share their shape classes), in `dtype` storage.
ModelWork training_work(int64_t max_tokens, DType dtype);
// What translating runs: beam x batch_size rows a decoder step (the encoder runs more, which the
// same classes cover) and the beam's top-k, in `dtype` storage.
ModelWork decoding_work(uint32_t beam, uint32_t batch_size, DType dtype);

// The problems of every tuned family a model of `config` runs for `work`: its Linears' matmuls
// (forward; training adds the input and weight gradients), the encoder's and decoder's attention
// (each kernel: forward, dK/dV, dQ), LayerNorm over d_model and, training, the loss over the
// vocabulary and Adam over the parameters and, decoding, the beam's top-k (none of these three
// when config.vocab_size is 0).
ops::OpProblems model_op_problems(const ModelConfig& config, const ModelWork& work,
                                  const DeviceInfo& info);

}  // namespace vkf::model
