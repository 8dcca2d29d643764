#include "model/decode/graph.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "engine/error.h"
#include "engine/ops/indexed_rows.h"
#include "model/decode/decoder_step.h"
#include "model/decode/encoder.h"

namespace vkf::model::decode {
namespace {

void put(const BufferRef& b, std::span<const int32_t> v) {
  std::memcpy(b.mapped, v.data(), v.size_bytes());
}

}  // namespace

DecodeGraph::DecodeGraph(Device& dev, const DeviceWeights& params, const DecodeShape& shape,
                         bool profile, bool timed)
    : dev_(dev),
      params_(params),
      state_(dev, params.config(), shape, params.activation_dtype()),
      profile_(profile),
      timed_(timed) {
  Recorder rec(dev, {.profile = profile, .timed = timed});
  Forward f{dev, rec, params, source_of(state_.named()), BufferRef{}};
  f.split_k = state_.split_k();
  record_encoder(f, state_);
  encoder_.emplace(rec.finish());
}

DecodeGraph::~DecodeGraph() = default;

void DecodeGraph::submit_encode_slot(uint32_t slot, std::span<const int32_t> src, int32_t len) {
  const DecodeShape& s = shape();
  if (slot >= s.batch || src.size() != s.src_len || len < 1 || uint32_t(len) > s.src_len)
    throw Error("DecodeGraph::encode_slot: slot " + std::to_string(slot) + " of " +
                std::to_string(s.batch) + ", a source of " + std::to_string(len) + " in " +
                std::to_string(src.size()) + " ids (shape: " + std::to_string(s.src_len) + ")");
  if (!slot_encoder_) {
    DecodeShape one = s;
    one.batch = 1;
    slot_state_ = std::make_unique<DecodeState>(dev_, params_.config(), one, state_.dtype());
    Recorder rec(dev_, {.profile = profile_, .timed = timed_});
    Forward f{dev_, rec, params_, source_of(slot_state_->named()), BufferRef{}};
    f.split_k = slot_state_->split_k();
    record_encoder(f, *slot_state_);
    const ModelConfig& c = params_.config();
    // The caches hold f16 pairs in 32-bit words in fp16 (DecodeState checks the widths are even).
    const uint32_t per_word = state_.dtype() == DType::f16 ? 2 : 1;
    for (int l = 0; l < c.decoder_layers; ++l)
      for (bool key : {true, false})
        ops::scatter_rows(dev_, rec,
                          {.src = key ? slot_state_->cross_k(l) : slot_state_->cross_v(l),
                           .dst = key ? state_.cross_k(l) : state_.cross_v(l),
                           .position = slot_state_->named().host("in.slot", 1),
                           .rows = 1,
                           .cols = s.src_len * uint32_t(c.heads) *
                                   uint32_t(key ? c.head_dim_k() : c.head_dim_v()) / per_word,
                           .positions = s.batch});
    slot_encoder_.emplace(rec.finish());
  }
  wait();  // the inputs below are read by the submission in flight
  put(slot_state_->src(), src);
  const int32_t one_len[] = {len};
  put(slot_state_->src_len(), one_len);
  const int32_t slot_index[] = {int32_t(slot)};
  put(slot_state_->named().host("in.slot", 1), slot_index);
  // The batch's source length of the slot, which the decoder's cross-attention reads.
  reinterpret_cast<int32_t*>(state_.src_len().mapped)[slot] = len;
  slot_encoder_->submit();
  in_flight_ = last_ = &*slot_encoder_;
}

Sequence& DecodeGraph::step_sequence(int from, int to) {
  auto& seq = steps_[size_t(from)][size_t(to)];
  if (!seq) {
    Recorder rec(dev_, {.profile = profile_, .timed = timed_});
    Forward f{dev_, rec, params_, source_of(state_.named()), BufferRef{}};
    f.split_k = state_.split_k();
    record_decoder_step(f, state_, from, to);
    seq = std::make_unique<Sequence>(rec.finish());
  }
  return *seq;
}

void DecodeGraph::wait() {
  if (in_flight_ == nullptr) return;
  Sequence* s = std::exchange(in_flight_, nullptr);
  s->wait();
}

void DecodeGraph::submit_encode(std::span<const int32_t> src, std::span<const int32_t> src_len) {
  const DecodeShape& s = shape();
  if (src.size() != size_t{s.batch} * s.src_len || src_len.size() != s.batch)
    throw Error("DecodeGraph::encode: source does not match the shape [" + std::to_string(s.batch) +
                " x " + std::to_string(s.src_len) + "]");
  for (int32_t n : src_len)
    if (n < 1 || uint32_t(n) > s.src_len)
      throw Error("DecodeGraph::encode: source length " + std::to_string(n) + " not in 1.." +
                  std::to_string(s.src_len));
  wait();  // the inputs below are read by the submission in flight
  put(state_.src(), src);
  put(state_.src_len(), src_len);
  encoder_->submit();
  in_flight_ = last_ = &*encoder_;
  next_t_ = 0;
}

void DecodeGraph::submit_step(uint32_t t, std::span<const int32_t> tokens,
                              std::span<const int32_t> origin) {
  if (t != next_t_) throw Error("DecodeGraph::step: expected position " + std::to_string(next_t_));
  positions_.assign(shape().rows(), int32_t(t));  // keeps its capacity from step to step
  submit_rows_step(positions_, tokens, origin);
  next_t_ = t + 1;
}

void DecodeGraph::submit_rows_step(std::span<const int32_t> positions,
                                   std::span<const int32_t> tokens,
                                   std::span<const int32_t> origin) {
  const DecodeShape& s = shape();
  const uint32_t R = s.rows();
  if (positions.size() != R || tokens.size() != R || (!origin.empty() && origin.size() != R))
    throw Error("DecodeGraph::step: expected " + std::to_string(R) + " rows");
  int32_t filled = 0;  // the most positions any row has cached
  for (int32_t t : positions) {
    if (t < 0 || uint32_t(t) >= s.max_out)
      throw Error("DecodeGraph::step: position " + std::to_string(t) + " not in 0.." +
                  std::to_string(s.max_out - 1) + " (max_out " + std::to_string(s.max_out) + ")");
    filled = std::max(filled, t);
  }
  for (int32_t o : origin)
    if (o < 0 || uint32_t(o) >= R)
      throw Error("DecodeGraph::step: origin row " + std::to_string(o) + " not in 0.." +
                  std::to_string(R - 1));
  bool reorder = false;
  for (uint32_t r = 0; r < origin.size(); ++r) reorder |= origin[r] != int32_t(r);
  wait();  // the inputs below are read by the submission in flight
  put(state_.tokens(), tokens);
  put(state_.positions(), positions);
  auto* len = reinterpret_cast<int32_t*>(state_.self_len().mapped);
  for (uint32_t r = 0; r < R; ++r) len[r] = positions[r] + 1;
  int to = current_;
  // Rows copy their first `filled` cached positions from their origin row; a row at a lower
  // position copies some it never reads (its key length stops before them).
  if (reorder && filled > 0) {
    put(state_.origin(), origin);
    *reinterpret_cast<int32_t*>(state_.filled().mapped) = filled;
    to = 1 - current_;
  }
  last_step_ = &step_sequence(current_, to);
  last_step_->submit();
  in_flight_ = last_ = last_step_;
  current_ = to;
}

std::vector<KernelTiming> DecodeGraph::last_step_timings() const {
  return last_step_ ? last_step_->timings() : std::vector<KernelTiming>{};
}

std::span<const float> DecodeGraph::logp() const {
  auto& st = const_cast<DecodeState&>(state_);
  return {reinterpret_cast<const float*>(st.out_logp().mapped),
          size_t{shape().rows()} * shape().candidates};
}

std::span<const uint32_t> DecodeGraph::token() const {
  auto& st = const_cast<DecodeState&>(state_);
  return {reinterpret_cast<const uint32_t*>(st.out_token().mapped),
          size_t{shape().rows()} * shape().candidates};
}

}  // namespace vkf::model::decode
