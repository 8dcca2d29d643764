#include "model/decode/encoder.h"

#include "model/blocks/decoder_layer.h"
#include "model/blocks/encoder_layer.h"

namespace vkf::model::decode {

void record_encoder(const Forward& f, DecodeState& state) {
  const DecodeShape& s = state.shape();
  const ParamSource p{f.params};
  const uint32_t ns = s.batch * s.src_len;
  const BufferRef memory =
      encoder_forward(f, encoder_layers(p), state.src(), state.src_len(), s.batch, s.src_len)
          .memory();
  // Every decoder layer's cross-attention keys and values, once per sentence.
  for (int l = 0; l < f.config().decoder_layers; ++l) {
    const MultiHeadAttention cross(p, "decoder.layers." + std::to_string(l) + ".cross_attn");
    linear_forward(f, cross.k_proj, memory, state.cross_k(l), ns, false, 1);
    linear_forward(f, cross.v_proj, memory, state.cross_v(l), ns, false, 2);
  }
}

}  // namespace vkf::model::decode
