#pragma once
// An encoder layer (self-attention, add & norm, feed-forward, add & norm) and the encoder stack
// over the embedded source, composed of the blocks beside this file.
#include <cstdint>
#include <string>
#include <vector>

#include "model/blocks/add_norm.h"
#include "model/blocks/attention.h"
#include "model/blocks/feed_forward.h"

namespace vkf::model {

class EncoderLayer {
 public:
  EncoderLayer(const ParamSource& p, int layer);

  struct Saved {
    MultiHeadAttention::Saved self;
    AddNorm::Saved self_norm;
    FeedForward::Saved ffn;
    AddNorm::Saved ffn_norm;
    BufferRef out;  // the layer's output [batch * len, d]
  };
  // x [batch * len, d] -> Saved::out; activations under enc.<layer>.* in the pool.
  Saved forward(const Forward& f, const BufferRef& x, uint32_t batch, uint32_t len,
                const BufferRef& src_len) const;
  // dy: the gradient of the layer's output on entry, of its input on return; ga and gb are
  // temporaries of the same size.
  void backward(const Backward& b, const Saved& s, const BufferRef& dy, const BufferRef& ga,
                const BufferRef& gb) const;

  MultiHeadAttention self_attn;
  AddNorm self_attn_norm;
  FeedForward ffn;
  AddNorm ffn_norm;

 private:
  int layer_;
  std::string name_;  // enc.<layer>
};

std::vector<EncoderLayer> encoder_layers(const ParamSource& p);

struct EncoderSaved {
  BufferRef embed;  // the embedded source [batch * len, d]
  std::vector<EncoderLayer::Saved> layers;
  BufferRef memory() const { return layers.empty() ? embed : layers.back().out; }
};

// Embeds src [batch, len] (under enc.embed) and runs the encoder layers over it.
EncoderSaved encoder_forward(const Forward& f, const std::vector<EncoderLayer>& layers,
                             const BufferRef& src, const BufferRef& src_len, uint32_t batch,
                             uint32_t len);

}  // namespace vkf::model
