#include "model/blocks/encoder_layer.h"

namespace vkf::model {
namespace {

std::string prefix(int layer) {
  return "encoder.layers." + std::to_string(layer);
}

}  // namespace

EncoderLayer::EncoderLayer(const ParamSource& p, int layer)
    : self_attn(p, prefix(layer) + ".self_attn"),
      self_attn_norm(p, prefix(layer) + ".self_attn_norm"),
      ffn(p, prefix(layer) + ".ffn"),
      ffn_norm(p, prefix(layer) + ".ffn_norm"),
      layer_(layer),
      name_("enc." + std::to_string(layer)) {}

EncoderLayer::Saved EncoderLayer::forward(const Forward& f, const BufferRef& x, uint32_t batch,
                                          uint32_t len, const BufferRef& src_len) const {
  const uint32_t rows = batch * len;
  const uint64_t size = uint64_t{rows} * uint32_t(f.config().d_model);
  const std::string& n = name_;
  Saved s;
  const BufferRef s1 = f.act(n + ".s1", size), x1 = f.act(n + ".x1", size);
  s.self = self_attn.forward(f, n + ".self",
                             {.xq = x,
                              .xkv = x,
                              .batch = batch,
                              .len_q = len,
                              .len_k = len,
                              .key_len = src_len,
                              .causal = false,
                              .dropout_tensor = dropout_id(false, layer_, 0)},
                             s1);
  s.self_norm =
      self_attn_norm.forward(f, n + ".ln1", x, s1, x1, rows, len, dropout_id(false, layer_, 1));
  const BufferRef s2 = f.act(n + ".s2", size);
  s.out = f.act(n + ".x2", size);
  s.ffn = ffn.forward(f, n + ".ffn", x1, s2, rows);
  s.ffn_norm =
      ffn_norm.forward(f, n + ".ln2", x1, s2, s.out, rows, len, dropout_id(false, layer_, 2));
  return s;
}

void EncoderLayer::backward(const Backward& b, const Saved& s, const BufferRef& dy,
                            const BufferRef& ga, const BufferRef& gb) const {
  ffn_norm.backward(b, s.ffn_norm, dy, ga, gb);
  ffn.backward(b, s.ffn, gb, ga);  // ga: gradient of x1
  self_attn_norm.backward(b, s.self_norm, ga, dy, gb);
  self_attn.backward(b, s.self, gb, dy, dy, true);  // dy: gradient of the input
}

std::vector<EncoderLayer> encoder_layers(const ParamSource& p) {
  std::vector<EncoderLayer> layers;
  for (int l = 0; l < p.config().encoder_layers; ++l) layers.emplace_back(p, l);
  return layers;
}

EncoderSaved encoder_forward(const Forward& f, const std::vector<EncoderLayer>& layers,
                             const BufferRef& src, const BufferRef& src_len, uint32_t batch,
                             uint32_t len) {
  const uint32_t rows = batch * len;
  EncoderSaved saved;
  saved.embed = f.act("enc.embed", uint64_t{rows} * uint32_t(f.config().d_model));
  embed(f, src, rows, len, BufferRef{}, saved.embed, dropout_id(false, 0, 15));
  for (const EncoderLayer& layer : layers)
    saved.layers.push_back(layer.forward(f, saved.memory(), batch, len, src_len));
  return saved;
}

}  // namespace vkf::model
