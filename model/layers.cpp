#include "model/layers.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/matmul.h"

namespace vkf::model {

BufferRef ActivationPool::find_or_allocate(const std::string& name, uint64_t elements,
                                           MemoryKind kind) {
  const uint64_t bytes = std::max<uint64_t>(elements, 1) * 4;
  auto it = live_.find(name);
  if (it != live_.end() && it->second.size() < bytes) {
    retired_.push_back(std::move(it->second));
    live_.erase(it);
    it = live_.end();
  }
  if (it == live_.end()) {
    it = live_.emplace(name, dev_.allocate(bytes, name, kind)).first;
    bytes_ += bytes;
  }
  return it->second.ref().slice(0, elements * 4);
}

BufferRef ActivationPool::write(const std::string& name, uint64_t elements) {
  return find_or_allocate(name, elements, MemoryKind::device);
}

BufferRef ActivationPool::read(const std::string& name, uint64_t elements) const {
  auto it = live_.find(name);
  if (it == live_.end()) throw Error("activation '" + name + "' is read but was never written");
  if (it->second.size() < std::max<uint64_t>(elements, 1) * 4)
    throw Error("activation '" + name + "' is read as " + std::to_string(elements) +
                " elements but was written with " + std::to_string(it->second.size() / 4));
  return it->second.ref().slice(0, elements * 4);
}

BufferRef ActivationPool::host(const std::string& name, uint64_t elements) {
  return find_or_allocate(name, elements, MemoryKind::host);
}

Linear linear_of(const DeviceWeights& p, const std::string& prefix, uint32_t in, uint32_t out) {
  return {p.param(prefix + ".weight"), p.param(prefix + ".bias"), in, out};
}

void linear_forward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                    const BufferRef& y, uint32_t rows, bool relu) {
  ops::MatmulArgs a;
  a.a = x;
  a.b = l.weight;
  a.c = y;
  a.bias = l.bias;
  a.m = rows;
  a.n = l.out;
  a.k = l.in;
  a.trans_b = true;
  a.epilogue = relu ? ops::Epilogue::bias_relu : ops::Epilogue::bias;
  ops::matmul(dev, rec, a);
}

void linear_backward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                     const BufferRef& dy, const BufferRef& dx, bool accumulate_dx,
                     const BufferRef& dweight, const BufferRef& dbias, const BufferRef& ones,
                     uint32_t rows) {
  ops::MatmulArgs gx;  // dx[rows, in] = dy[rows, out] W[out, in]
  gx.a = dy;
  gx.b = l.weight;
  gx.c = dx;
  gx.m = rows;
  gx.n = l.in;
  gx.k = l.out;
  gx.beta = accumulate_dx ? 1.0f : 0.0f;
  ops::matmul(dev, rec, gx);

  ops::MatmulArgs gw;  // dW[out, in] += dy^T[out, rows] x[rows, in]
  gw.a = dy;
  gw.trans_a = true;
  gw.b = x;
  gw.c = dweight;
  gw.m = l.out;
  gw.n = l.in;
  gw.k = rows;
  gw.beta = 1.0f;
  ops::matmul(dev, rec, gw);

  ops::MatmulArgs gb;  // db[1, out] += ones[1, rows] dy[rows, out]
  gb.a = ones;
  gb.b = dy;
  gb.c = dbias;
  gb.m = 1;
  gb.n = l.out;
  gb.k = rows;
  gb.beta = 1.0f;
  ops::matmul(dev, rec, gb);
}

ops::AttentionLayout heads_layout(uint32_t len, uint32_t heads, uint32_t dh) {
  return {len * heads * dh, dh, heads * dh};
}

uint32_t dropout_id(bool decoder, int layer, uint32_t site) {
  return (decoder ? 0x10000u : 0u) + uint32_t(layer) * 16u + site;
}

void embed(const Forward& f, const BufferRef& tokens, uint32_t count, uint32_t len,
           const BufferRef& positions, const BufferRef& out, uint32_t dropout_tensor) {
  const ModelConfig& c = f.config();
  ops::EmbeddingForwardArgs e;
  e.tokens = tokens;
  e.positions = positions;
  e.table = f.params.param("embed.weight");
  if (c.learned_positions) e.pos_table = f.params.param("pos_embed.weight");
  e.out = out;
  e.step = f.scalars;
  e.tokens_count = count;
  e.d = uint32_t(c.d_model);
  e.vocab = uint32_t(c.vocab_size);
  e.len = len;
  e.max_len = uint32_t(c.max_len);
  e.pad_id = c.pad_id;
  e.scale = std::sqrt(float(c.d_model));
  e.dropout = f.dropout;
  e.tensor_id = dropout_tensor;
  ops::embedding_forward(f.dev, f.rec, e);
}

void add_norm(const Forward& f, const std::string& name, const std::string& norm,
              const BufferRef& x, const BufferRef& s, const BufferRef& x_out, uint32_t rows,
              uint32_t len, uint32_t dropout_tensor) {
  const ModelConfig& c = f.config();
  const uint32_t d = uint32_t(c.d_model);
  ops::LayerNormForwardArgs a;
  a.x = x;
  a.s = s;
  a.gamma = f.params.param(norm + ".weight");
  a.beta = f.params.param(norm + ".bias");
  a.y = x_out;
  a.h = f.buf(name + ".h", uint64_t{rows} * d);
  a.mean = f.buf(name + ".mean", rows);
  a.rstd = f.buf(name + ".rstd", rows);
  a.step = f.scalars;
  a.rows = rows;
  a.d = d;
  a.eps = c.layer_norm_eps;
  a.dropout = f.dropout;
  a.tensor_id = dropout_tensor;
  a.batch_row_rows = len;
  ops::layer_norm_forward(f.dev, f.rec, a);
}

void mha(const Forward& f, const std::string& name, const std::string& prefix, const BufferRef& xq,
         const BufferRef& xkv, uint32_t batch, uint32_t Lq, uint32_t Lk, const BufferRef& key_len,
         bool causal, const BufferRef& s_out, uint32_t dropout_tensor) {
  const ModelConfig& c = f.config();
  const uint32_t d = uint32_t(c.d_model), H = uint32_t(c.heads), dk = uint32_t(c.head_dim_k()),
                 dv = uint32_t(c.head_dim_v());
  const uint32_t nq = batch * Lq, nk = batch * Lk;
  BufferRef q = f.buf(name + ".q", uint64_t{nq} * H * dk);
  BufferRef k = f.buf(name + ".k", uint64_t{nk} * H * dk);
  BufferRef v = f.buf(name + ".v", uint64_t{nk} * H * dv);
  BufferRef o = f.buf(name + ".o", uint64_t{nq} * H * dv);
  linear_forward(f.dev, f.rec, linear_of(f.params, prefix + ".q_proj", d, H * dk), xq, q, nq);
  linear_forward(f.dev, f.rec, linear_of(f.params, prefix + ".k_proj", d, H * dk), xkv, k, nk);
  linear_forward(f.dev, f.rec, linear_of(f.params, prefix + ".v_proj", d, H * dv), xkv, v, nk);
  ops::AttentionArgs a;
  a.batch = batch;
  a.heads = H;
  a.len_q = Lq;
  a.len_k = Lk;
  a.d_k = dk;
  a.d_v = dv;
  a.q = q;
  a.k = k;
  a.v = v;
  a.o = o;
  a.q_layout = heads_layout(Lq, H, dk);
  a.k_layout = heads_layout(Lk, H, dk);
  a.v_layout = heads_layout(Lk, H, dv);
  a.o_layout = heads_layout(Lq, H, dv);
  a.lse = f.buf(name + ".lse", uint64_t{batch} * H * Lq);
  a.key_len = key_len;
  a.causal = causal;
  a.dropout_p = f.attention_dropout;
  a.dropout_tensor = dropout_tensor;
  a.scalars = f.scalars;
  ops::attention_forward(f.dev, f.rec, a);
  linear_forward(f.dev, f.rec, linear_of(f.params, prefix + ".o_proj", H * dv, d), o, s_out, nq);
}

void ffn(const Forward& f, const std::string& name, const std::string& prefix, const BufferRef& x,
         const BufferRef& s_out, uint32_t rows) {
  const ModelConfig& c = f.config();
  const uint32_t d = uint32_t(c.d_model), dff = uint32_t(c.d_ff);
  BufferRef h = f.buf(name + ".f", uint64_t{rows} * dff);
  linear_forward(f.dev, f.rec, linear_of(f.params, prefix + ".fc1", d, dff), x, h, rows, true);
  linear_forward(f.dev, f.rec, linear_of(f.params, prefix + ".fc2", dff, d), h, s_out, rows);
}

BufferRef encoder_forward(const Forward& f, const BufferRef& src, const BufferRef& src_len,
                          uint32_t batch, uint32_t Ls) {
  const ModelConfig& c = f.config();
  const uint32_t Ns = batch * Ls, d = uint32_t(c.d_model);
  BufferRef x = f.buf("enc.embed", uint64_t{Ns} * d);
  embed(f, src, Ns, Ls, BufferRef{}, x, dropout_id(false, 0, 15));
  for (int l = 0; l < c.encoder_layers; ++l) {
    const std::string n = "enc." + std::to_string(l), p = "encoder.layers." + std::to_string(l);
    BufferRef s1 = f.buf(n + ".s1", uint64_t{Ns} * d), x1 = f.buf(n + ".x1", uint64_t{Ns} * d);
    mha(f, n + ".self", p + ".self_attn", x, x, batch, Ls, Ls, src_len, false, s1,
        dropout_id(false, l, 0));
    add_norm(f, n + ".ln1", p + ".self_attn_norm", x, s1, x1, Ns, Ls, dropout_id(false, l, 1));
    BufferRef s2 = f.buf(n + ".s2", uint64_t{Ns} * d), x2 = f.buf(n + ".x2", uint64_t{Ns} * d);
    ffn(f, n + ".ffn", p + ".ffn", x1, s2, Ns);
    add_norm(f, n + ".ln2", p + ".ffn_norm", x1, s2, x2, Ns, Ls, dropout_id(false, l, 2));
    x = x2;
  }
  return x;
}

}  // namespace vkf::model
