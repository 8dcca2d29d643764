#pragma once
// Multi-head attention: the q, k, v and output projections around the fused attention kernel
// (engine/ops/attention.h), forward and backward. The decoder step (model/decode/) uses its
// projections and attention_args on their own, over its key/value cache.
#include <cstdint>
#include <string>

#include "engine/ops/attention.h"
#include "model/blocks/block.h"

namespace vkf::model {

// The buffers of one attention; q, k, v, o are projection outputs, [batch * len, heads * dh].
struct AttentionBuffers {
  BufferRef q, k, v, o;
  BufferRef lse;             // written by the forward: [batch, heads, len_q]
  BufferRef key_len;         // int32 [batch]: keys j >= key_len[b] are masked
  DType dtype = DType::f32;  // of q, k, v, o (and their gradients)
};

// The one place attention arguments are set up: the model's heads and head sizes, the
// projections seen as [batch, heads, len, dh]. Masks, dropout and tiles are the caller's.
ops::AttentionArgs attention_args(const ModelConfig& c, uint32_t batch, uint32_t len_q,
                                  uint32_t len_k, const AttentionBuffers& buffers);

// The queries xq [batch * len_q, d] attend over xkv [batch * len_k, d].
struct AttentionInput {
  BufferRef xq, xkv;
  uint32_t batch = 0, len_q = 0, len_k = 0;
  BufferRef key_len;
  bool causal = false;
  uint32_t dropout_tensor = 0;  // Philox tensor id of the attention weights' mask
};

class MultiHeadAttention {
 public:
  // The `prefix`.{q,k,v,o}_proj parameters.
  MultiHeadAttention(const ParamSource& p, const std::string& prefix);

  struct Saved {
    BufferRef xq, xkv;
    ops::AttentionArgs attention;  // as the forward ran it: q, k, v, o, lse, masks, dropout
  };
  // s_out [batch * len_q, d] = o_proj(attention(q_proj(xq), k_proj(xkv), v_proj(xkv))); the
  // projections and the LSE go to the pool under `name`.{q,k,v,o,lse}.
  Saved forward(const Forward& f, const std::string& name, const AttentionInput& in,
                const BufferRef& s_out) const;
  // ds_out: gradient of s_out. Adds the gradient w.r.t. xq into dxq and w.r.t. xkv into dxkv
  // (the same buffer for self-attention); with accumulate_kv false the k_proj term overwrites
  // dxkv instead.
  void backward(const Backward& b, const Saved& s, const BufferRef& ds_out, const BufferRef& dxq,
                const BufferRef& dxkv, bool accumulate_kv) const;

  const ModelConfig& config;
  Linear q_proj, k_proj, v_proj, o_proj;
};

}  // namespace vkf::model
