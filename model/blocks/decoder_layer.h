#pragma once
// A decoder layer (causal self-attention, cross-attention over the encoder's memory and the
// feed-forward network, each followed by add & norm), composed of the blocks beside this file.
// The decoder step (model/decode/decoder_step.cpp) composes the same blocks over its cache.
#include <cstdint>
#include <string>
#include <vector>

#include "model/blocks/add_norm.h"
#include "model/blocks/attention.h"
#include "model/blocks/feed_forward.h"

namespace vkf::model {

class DecoderLayer {
 public:
  DecoderLayer(const ParamSource& p, int layer);

  struct Saved {
    MultiHeadAttention::Saved self;
    AddNorm::Saved self_norm;
    MultiHeadAttention::Saved cross;
    AddNorm::Saved cross_norm;
    FeedForward::Saved ffn;
    AddNorm::Saved ffn_norm;
    BufferRef out;  // the layer's output [batch * tgt_len, d]
  };
  // y [batch * tgt_len, d] over memory [batch * src_len, d] -> Saved::out; activations under
  // dec.<layer>.* in the pool.
  Saved forward(const Forward& f, const BufferRef& y, const BufferRef& memory, uint32_t batch,
                uint32_t tgt_len, uint32_t src_len, const BufferRef& tgt_lens,
                const BufferRef& src_lens) const;
  // dy: the gradient of the layer's output (overwritten); dx receives the gradient of its input
  // and dmemory the memory's (added); scratch is a temporary of their size.
  void backward(const Backward& b, const Saved& s, const BufferRef& dy, const BufferRef& dx,
                const BufferRef& scratch, const BufferRef& dmemory) const;

  // The pool names of this layer's activations: dec.<layer>.
  const std::string& name() const { return name_; }

  MultiHeadAttention self_attn;
  AddNorm self_attn_norm;
  MultiHeadAttention cross_attn;
  AddNorm cross_attn_norm;
  FeedForward ffn;
  AddNorm ffn_norm;

 private:
  int layer_;
  std::string name_;
};

std::vector<DecoderLayer> decoder_layers(const ParamSource& p);

}  // namespace vkf::model
