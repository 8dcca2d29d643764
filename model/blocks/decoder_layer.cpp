#include "model/blocks/decoder_layer.h"

namespace vkf::model {
namespace {

std::string prefix(int layer) {
  return "decoder.layers." + std::to_string(layer);
}

}  // namespace

DecoderLayer::DecoderLayer(const ParamSource& p, int layer)
    : self_attn(p, prefix(layer) + ".self_attn"),
      self_attn_norm(p, prefix(layer) + ".self_attn_norm"),
      cross_attn(p, prefix(layer) + ".cross_attn"),
      cross_attn_norm(p, prefix(layer) + ".cross_attn_norm"),
      ffn(p, prefix(layer) + ".ffn"),
      ffn_norm(p, prefix(layer) + ".ffn_norm"),
      layer_(layer),
      name_("dec." + std::to_string(layer)) {}

DecoderLayer::Saved DecoderLayer::forward(const Forward& f, const BufferRef& y,
                                          const BufferRef& memory, uint32_t batch, uint32_t tgt_len,
                                          uint32_t src_len, const BufferRef& tgt_lens,
                                          const BufferRef& src_lens) const {
  const uint32_t rows = batch * tgt_len;
  const uint64_t size = uint64_t{rows} * uint32_t(f.config().d_model);
  const std::string& n = name_;
  Saved s;
  const BufferRef s1 = f.act(n + ".s1", size), y1 = f.act(n + ".y1", size);
  s.self = self_attn.forward(f, n + ".self",
                             {.xq = y,
                              .xkv = y,
                              .batch = batch,
                              .len_q = tgt_len,
                              .len_k = tgt_len,
                              .key_len = tgt_lens,
                              .causal = true,
                              .dropout_tensor = dropout_id(true, layer_, 0)},
                             s1);
  s.self_norm =
      self_attn_norm.forward(f, n + ".ln1", y, s1, y1, rows, tgt_len, dropout_id(true, layer_, 1));
  const BufferRef s2 = f.act(n + ".s2", size), y2 = f.act(n + ".y2", size);
  s.cross = cross_attn.forward(f, n + ".cross",
                               {.xq = y1,
                                .xkv = memory,
                                .batch = batch,
                                .len_q = tgt_len,
                                .len_k = src_len,
                                .key_len = src_lens,
                                .causal = false,
                                .dropout_tensor = dropout_id(true, layer_, 2)},
                               s2);
  s.cross_norm = cross_attn_norm.forward(f, n + ".ln2", y1, s2, y2, rows, tgt_len,
                                         dropout_id(true, layer_, 3));
  const BufferRef s3 = f.act(n + ".s3", size);
  s.out = f.act(n + ".y3", size);
  s.ffn = ffn.forward(f, n + ".ffn", y2, s3, rows);
  s.ffn_norm =
      ffn_norm.forward(f, n + ".ln3", y2, s3, s.out, rows, tgt_len, dropout_id(true, layer_, 4));
  return s;
}

void DecoderLayer::backward(const Backward& b, const Saved& s, const BufferRef& dy,
                            const BufferRef& dx, const BufferRef& scratch,
                            const BufferRef& dmemory) const {
  ffn_norm.backward(b, s.ffn_norm, dy, dx, scratch);
  ffn.backward(b, s.ffn, scratch, dx);  // dx: gradient of y2
  cross_attn_norm.backward(b, s.cross_norm, dx, dy, scratch);
  cross_attn.backward(b, s.cross, scratch, dy, dmemory, true);  // dy: gradient of y1
  self_attn_norm.backward(b, s.self_norm, dy, dx, scratch);
  self_attn.backward(b, s.self, scratch, dx, dx, true);  // dx: gradient of the input
}

std::vector<DecoderLayer> decoder_layers(const ParamSource& p) {
  std::vector<DecoderLayer> layers;
  for (int l = 0; l < p.config().decoder_layers; ++l) layers.emplace_back(p, l);
  return layers;
}

}  // namespace vkf::model
