#pragma once
// One incremental decoder step over every row at once, recorded once per shape and replayed for
// every position t: the host writes the input tokens, t (positions), t + 1 (self-attention
// lengths) and, when beams were reordered, each row's origin row before the submit.
//
//   [gather the first t cached positions of row origin[r] from cache copy `from` into `to`]
//   y = embed(token, t)
//   per layer: q, k, v of y; k, v written at position t of cache `to`; attention over
//              key_len = t + 1; add & norm; cross-attention over the encoder's K/V (one
//              sentence's beam rows are its query rows); add & norm; FFN; add & norm
//   log_softmax(y E^T) of the vocabulary, then its top `candidates` per row -> host.
#include "model/decode/state.h"

namespace vkf::model::decode {

// from == to: no reordering, the caches of copy `to` are extended in place.
void record_decoder_step(const Forward& f, DecodeState& state, int from, int to);

}  // namespace vkf::model::decode
