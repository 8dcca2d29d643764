#include "model/decode/encoder.h"

namespace vkf::model::decode {

void record_encoder(const Forward& f, DecodeState& state) {
  const ModelConfig& c = f.config();
  const DecodeShape& s = state.shape();
  const uint32_t d = uint32_t(c.d_model), H = uint32_t(c.heads);
  const uint32_t ns = s.batch * s.src_len;
  const BufferRef memory = encoder_forward(f, state.src(), state.src_len(), s.batch, s.src_len);
  for (int l = 0; l < c.decoder_layers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".cross_attn";
    linear_forward(f.dev, f.rec, linear_of(f.params, p + ".k_proj", d, H * c.head_dim_k()), memory,
                   state.cross_k(l), ns);
    linear_forward(f.dev, f.rec, linear_of(f.params, p + ".v_proj", d, H * c.head_dim_v()), memory,
                   state.cross_v(l), ns);
  }
}

}  // namespace vkf::model::decode
