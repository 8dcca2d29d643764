#include "model/blocks/attention.h"

namespace vkf::model {

ops::AttentionArgs attention_args(const ModelConfig& c, uint32_t batch, uint32_t len_q,
                                  uint32_t len_k, const AttentionBuffers& buffers) {
  const uint32_t H = uint32_t(c.heads), dk = uint32_t(c.head_dim_k()),
                 dv = uint32_t(c.head_dim_v());
  ops::AttentionArgs a;
  a.batch = batch;
  a.heads = H;
  a.len_q = len_q;
  a.len_k = len_k;
  a.d_k = dk;
  a.d_v = dv;
  a.q = buffers.q;
  a.k = buffers.k;
  a.v = buffers.v;
  a.o = buffers.o;
  a.q_layout = heads_layout(len_q, H, dk);
  a.k_layout = heads_layout(len_k, H, dk);
  a.v_layout = heads_layout(len_k, H, dv);
  a.o_layout = heads_layout(len_q, H, dv);
  a.lse = buffers.lse;
  a.key_len = buffers.key_len;
  a.dtype = buffers.dtype;
  return a;
}

MultiHeadAttention::MultiHeadAttention(const ParamSource& p, const std::string& prefix)
    : config(p.config()) {
  const uint32_t d = uint32_t(config.d_model), H = uint32_t(config.heads),
                 dk = uint32_t(config.head_dim_k()), dv = uint32_t(config.head_dim_v());
  q_proj = p.linear(prefix + ".q_proj", d, H * dk);
  k_proj = p.linear(prefix + ".k_proj", d, H * dk);
  v_proj = p.linear(prefix + ".v_proj", d, H * dv);
  o_proj = p.linear(prefix + ".o_proj", H * dv, d);
}

MultiHeadAttention::Saved MultiHeadAttention::forward(const Forward& f, const std::string& name,
                                                      const AttentionInput& in,
                                                      const BufferRef& s_out) const {
  const uint32_t nq = in.batch * in.len_q, nk = in.batch * in.len_k;
  AttentionBuffers buf;
  buf.q = f.act(name + ".q", uint64_t{nq} * q_proj.out);
  buf.k = f.act(name + ".k", uint64_t{nk} * k_proj.out);
  buf.v = f.act(name + ".v", uint64_t{nk} * v_proj.out);
  buf.o = f.act(name + ".o", uint64_t{nq} * o_proj.in);
  buf.dtype = f.dtype();
  // Split-k workspace parts 0, 1, 2: the three projections may run side by side.
  linear_forward(f, q_proj, in.xq, buf.q, nq);
  linear_forward(f, k_proj, in.xkv, buf.k, nk, false, 1);
  linear_forward(f, v_proj, in.xkv, buf.v, nk, false, 2);
  buf.lse = f.buf(name + ".lse", uint64_t{in.batch} * uint32_t(config.heads) * in.len_q);
  buf.key_len = in.key_len;
  Saved s{in.xq, in.xkv, attention_args(config, in.batch, in.len_q, in.len_k, buf)};
  s.attention.causal = in.causal;
  s.attention.dropout_p = f.attention_dropout;
  s.attention.dropout_tensor = in.dropout_tensor;
  s.attention.scalars = f.scalars;
  ops::attention_forward(f.dev, f.rec, s.attention);
  linear_forward(f, o_proj, buf.o, s_out, nq);
  return s;
}

void MultiHeadAttention::backward(const Backward& b, const Saved& s, const BufferRef& ds_out,
                                  const BufferRef& dxq, const BufferRef& dxkv,
                                  bool accumulate_kv) const {
  const ops::AttentionArgs& fwd = s.attention;
  const uint32_t nq = fwd.batch * fwd.len_q, nk = fwd.batch * fwd.len_k;
  ops::AttentionBackwardArgs a;
  a.fwd = fwd;
  a.d_o = b.part(b.d_o, uint64_t{nq} * o_proj.in);
  a.d_q = b.part(b.d_q, uint64_t{nq} * q_proj.out);
  a.d_k = b.part(b.d_k, uint64_t{nk} * k_proj.out);
  a.d_v = b.part(b.d_v, uint64_t{nk} * v_proj.out);
  a.delta = b.delta.slice(0, uint64_t{fwd.batch} * fwd.heads * fwd.len_q * 4);
  linear_backward(b, o_proj, fwd.o, ds_out, a.d_o, false, nq);
  ops::attention_backward(b.dev, b.rec, a);
  linear_backward(b, q_proj, s.xq, a.d_q, dxq, true, nq);
  linear_backward(b, k_proj, s.xkv, a.d_k, dxkv, accumulate_kv, nk);
  linear_backward(b, v_proj, s.xkv, a.d_v, dxkv, true, nk);
}

}  // namespace vkf::model
