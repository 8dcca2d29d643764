#pragma once
// The device state of decoding one batch: its shape and the buffers the encoder pass and the
// decoder step share (host-visible per-step inputs, the cross-attention K/V of every decoder
// layer, the self-attention K/V caches, the top-k outputs).
#include <algorithm>
#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/layers.h"

namespace vkf::model::decode {

// One recorded decoding shape. Rows are batch * beam, sentence-major (row = b * beam + j).
struct DecodeShape {
  uint32_t batch = 0;       // sentences
  uint32_t beam = 1;        // hypotheses per sentence
  uint32_t src_len = 0;     // padded source length (pieces + EOS)
  uint32_t max_out = 0;     // decoder positions (output tokens including EOS), <= max_len
  uint32_t candidates = 0;  // top-k kept per row and step
  uint32_t rows() const { return batch * beam; }
  // A beam's top-k per row and step: 2 beam + 2 (enough that `beam` survive the end-of-sentence
  // and the never-picked pad and bos), at most the vocabulary.
  static uint32_t candidates_for(uint32_t beam, uint32_t vocab) {
    return std::min(vocab, 2 * beam + 2);
  }
  bool operator<(const DecodeShape& o) const;
};

class DecodeState {
 public:
  // dtype: of the K/V caches and the activations (f16 over fp16 weights).
  DecodeState(Device& dev, const ModelConfig& config, const DecodeShape& shape,
              DType dtype = DType::f32);
  DType dtype() const { return dtype_; }

  const DecodeShape& shape() const { return shape_; }
  ActivationPool& named() { return named_; }
  uint64_t bytes() const { return named_.bytes(); }

  // Host-visible inputs, int32.
  BufferRef src() { return named_.host("in.src", uint64_t{shape_.batch} * shape_.src_len); }
  BufferRef src_len() { return named_.host("in.src_len", shape_.batch); }
  BufferRef tokens() { return named_.host("in.tokens", shape_.rows()); }        // inputs at t
  BufferRef positions() { return named_.host("in.positions", shape_.rows()); }  // t
  BufferRef self_len() { return named_.host("in.self_len", shape_.rows()); }    // t + 1
  BufferRef origin() { return named_.host("in.origin", shape_.rows()); }  // cache row to continue
  BufferRef filled() { return named_.host("in.filled", 1); }              // positions cached: t
  // Host-visible outputs: [rows, candidates] log-probabilities (f32) and token ids (u32).
  BufferRef out_logp() {
    return named_.host("out.logp", uint64_t{shape_.rows()} * shape_.candidates);
  }
  BufferRef out_token() {
    return named_.host("out.token", uint64_t{shape_.rows()} * shape_.candidates);
  }

  // Cross-attention K and V of decoder layer l: [batch, src_len, heads * d_k|d_v].
  BufferRef cross_k(int l);
  BufferRef cross_v(int l);
  // Self-attention caches of decoder layer l, two copies (0, 1) for reordering by gather:
  // [rows, max_out, heads * d_k|d_v].
  BufferRef cache_k(int copy, int l);
  BufferRef cache_v(int copy, int l);
  // The split-k workspace of the encoder pass's and the step's matmuls (Forward::split_k): each
  // part as much as the one that wants most would use, at the encoder's rows (batch x src_len)
  // and the step's (rows()); an invalid ref where none would split.
  BufferRef split_k();

 private:
  // A buffer of `elements` values of dtype_, in the pool's 4-byte words.
  BufferRef cache(const std::string& name, uint64_t elements);
  ModelConfig config_;
  DecodeShape shape_;
  DType dtype_;
  ActivationPool named_;
};

}  // namespace vkf::model::decode
