#pragma once
// Decoding of one batch shape on the device: the encoder pass and the incremental decoder step,
// each recorded once and replayed (per batch, per position). The host writes token ids,
// positions and beam origins into mapped buffers and reads back only [rows, candidates] top-k
// log-probabilities and token ids per step.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "model/decode/state.h"

namespace vkf::model::decode {

class DecodeGraph {
 public:
  // profile: GPU timestamps around every dispatch (see last_step_timings()). timed: two
  // timestamps per submission (last_gpu_milliseconds()).
  DecodeGraph(Device& dev, const DeviceWeights& params, const DecodeShape& shape,
              bool profile = false, bool timed = false);
  ~DecodeGraph();

  const DecodeShape& shape() const { return state_.shape(); }

  // src: [batch, src_len] ids (pieces + EOS, padded); src_len: [batch] non-pad lengths (>= 1).
  // Runs the encoder and the cross-attention K/V; the next step must be t = 0. Only the
  // cross-attention K/V outlive it: encoding a batch again with new sentences in some of its
  // slots leaves the others' values (the same sources give the same bits) and their caches.
  void encode(std::span<const int32_t> src, std::span<const int32_t> src_len) {
    submit_encode(src, src_len);
    wait();
  }

  // Decoder step at position t (t = 0 takes BOS): tokens[rows] are the inputs at t. origin[r]
  // (empty = r) is the row whose cached positions 0..t-1 row r continues (beam reordering).
  // Afterwards logp()/token() hold each row's best `candidates` next tokens, best first.
  void step(uint32_t t, std::span<const int32_t> tokens, std::span<const int32_t> origin = {}) {
    submit_step(t, tokens, origin);
    wait();
  }

  // The same in halves, so that the host works while the device runs: submit, then poll
  // ready() or wait(). logp()/token() are valid once the step's submission has finished. A
  // submission waits for the one before it.
  void submit_encode(std::span<const int32_t> src, std::span<const int32_t> src_len);
  // Encodes one sentence (src: src_len ids, padded; len its non-pad length) into slot `slot` of
  // the batch, its cross-attention K/V and source length, and leaves the other slots as they
  // are: a sentence joining a running batch (model/decode/batching_session.h) costs the encoder
  // pass of one sentence, not of the batch. The slot's rows then start at position 0.
  void submit_encode_slot(uint32_t slot, std::span<const int32_t> src, int32_t len);
  void submit_step(uint32_t t, std::span<const int32_t> tokens,
                   std::span<const int32_t> origin = {});
  // A step whose rows are at positions of their own (positions[r] < max_out): a service's
  // sentences join a running batch at different times (model/decode/batching_session.h). The
  // kernels take a position and a key length per row already; origin as for submit_step. The
  // scalar steps' order (t = 0, 1, ...) is not checked here.
  void submit_rows_step(std::span<const int32_t> positions, std::span<const int32_t> tokens,
                        std::span<const int32_t> origin = {});
  bool ready() const { return in_flight_ == nullptr || in_flight_->ready(); }
  void wait();
  // GPU time of the last finished submission (timed or profiling graphs; else 0).
  double last_gpu_milliseconds() const { return last_ ? last_->gpu_milliseconds() : 0.0; }
  // Bytes of this shape's buffers: K/V caches and activations (device-local), inputs and
  // outputs (host-visible).
  uint64_t bytes() const { return state_.bytes(); }

  std::span<const float> logp() const;      // [rows, candidates]
  std::span<const uint32_t> token() const;  // [rows, candidates]

  // Per-dispatch times of the last step and of the last encode (profiling graphs only).
  std::vector<KernelTiming> last_step_timings() const;
  std::vector<KernelTiming> encode_timings() const { return encoder_->timings(); }

 private:
  Sequence& step_sequence(int from, int to);

  Device& dev_;
  const DeviceWeights& params_;
  DecodeState state_;
  std::optional<Sequence> encoder_;
  // submit_encode_slot's: the encoder pass of one sentence into its own state, then its
  // cross-attention K/V copied into the batch's at the slot that "in.slot" names.
  std::unique_ptr<DecodeState> slot_state_;
  std::optional<Sequence> slot_encoder_;
  std::array<std::array<std::unique_ptr<Sequence>, 2>, 2> steps_;  // [from][to]
  Sequence* last_step_ = nullptr;
  Sequence* in_flight_ = nullptr;  // submitted, not yet waited for
  Sequence* last_ = nullptr;       // the last submission, encoder or step
  bool profile_ = false;
  bool timed_ = false;
  int current_ = 0;  // the cache copy holding the hypotheses
  uint32_t next_t_ = 0;
  std::vector<int32_t> positions_;  // submit_step's, every row at t
};

}  // namespace vkf::model::decode
