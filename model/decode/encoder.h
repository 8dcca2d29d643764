#pragma once
// The encoder pass of decoding, run once per batch: source embeddings and encoder layers, then
// the cross-attention keys and values of every decoder layer (they depend on the source only,
// so the decoder steps never recompute them).
#include "model/decode/state.h"

namespace vkf::model::decode {

// Reads state.src() and state.src_len(); writes state.cross_k(l) and state.cross_v(l).
void record_encoder(const Forward& f, DecodeState& state);

}  // namespace vkf::model::decode
