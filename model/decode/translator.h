#pragma once
// Many sentences at once: sorts the sources by length into batches (so little padding is
// decoded), encodes each batch once, runs greedy or beam search, and returns the n-best lists in
// input order. Recorded graphs are kept per shape (lengths rounded up to a multiple of 8, so a
// few recordings serve a whole file).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "model/decode/graph.h"
#include "model/decode/search.h"
#include "model/decode/translation_job.h"

namespace vkf::model::decode {

// The widest beam accepted. Wider beams cost time in proportion (each hypothesis is a row of
// every decoding step; beam 256 took three minutes for one sentence on a CPU device) and do not
// help: translation quality peaks at beams of about 5-10 and then falls (Koehn and Knowles 2017,
// "Six challenges for NMT"; Stahlberg and Byrne 2019).
constexpr uint32_t k_max_beam = 64;

// Batch shapes a Translator keeps recorded (each holds its K/V caches); a BatchingSession,
// whose batches come in more shapes, keeps more while it is open.
constexpr size_t k_max_graphs = 4;
constexpr size_t k_session_graphs = 24;

struct TranslateOptions {
  uint32_t beam = 4;
  float alpha = 0.6f;        // length penalty exponent; 0 = raw log-probability
  float max_len_a = 1.0f;    // maximum output length (EOS included) = a * source length + b,
  int max_len_b = 50;        // capped by the model's max_len
  uint32_t nbest = 1;        // hypotheses per sentence, <= beam
  uint32_t batch_size = 32;  // sentences decoded at once (each takes `beam` rows)
  // Slots a BatchingSession's batch opens with at least (up to batch_size), so that requests
  // arriving while few decode can join it. 0: 4 on a GPU, where a few more rows cost a step
  // little; 1 on a CPU device, where every row costs its arithmetic (lavapipe served one client
  // 1.2x slower with 4).
  uint32_t session_min_slots = 0;
  bool timed = false;  // GPU timestamps per submission (TranslationJob reports GPU time)

  void validate() const;
};

struct TranslateStats {
  uint64_t sentences = 0;
  uint64_t source_tokens = 0;
  uint64_t output_tokens = 0;  // of the best hypotheses, EOS included
};

class Translator {
 public:
  Translator(Device& dev, const DeviceWeights& params, const TranslateOptions& options);
  ~Translator();

  // sources: pieces without EOS (it is appended; an empty source gives an empty result list).
  // Sources longer than max_len - 1 pieces are cut. `progress(done)` is called after each batch.
  std::vector<std::vector<Hypothesis>> translate(
      const std::vector<std::vector<int32_t>>& sources,
      const std::function<void(uint64_t done)>& progress = {});
  // The same as steps the host drives (model/decode/translation_job.h). One job at a time: a
  // second start() before the first job is destroyed throws. The job must not outlive this.
  TranslationJob start(const std::vector<std::vector<int32_t>>& sources,
                       const std::function<void(uint64_t done)>& progress = {});
  // Bytes of the recorded shapes' buffers (K/V caches, activations, inputs and outputs).
  uint64_t cache_bytes() const;

  // Maximum output length (EOS included) for a source of `source_tokens` (EOS included).
  uint32_t max_output(uint32_t source_tokens) const;
  // Longest source translate() keeps whole, in pieces (EOS excluded).
  uint32_t max_source_pieces() const { return uint32_t(config_.max_len) - 1; }
  const TranslateStats& stats() const { return stats_; }
  const TranslateOptions& options() const { return options_; }

 private:
  friend class TranslationJob;
  friend class BatchingSession;
  DecodeGraph& graph(const DecodeShape& shape);
  // Drops the least recently used shapes until at most n are kept.
  void limit_graphs(size_t n);
  // Submits the encoder pass of one batch of shape batch x (longest rounded up): rows[b] is
  // sentence b's pieces (at most `batch` rows; the rest are padding). Sets `max_out` per row
  // and returns the graph. TranslationJob and BatchingSession share it, so a sentence meets
  // the same shapes and lengths in both.
  // min_src_len: a padded source length the shape has at least (and the output positions any
  // source that long may use), so that sentences up to that long can join it later.
  DecodeGraph& submit_batch(std::span<const std::vector<int32_t>* const> rows, uint32_t batch,
                            std::vector<uint32_t>& max_out, uint32_t min_src_len = 0);
  // Encodes `slots` (one per sentence of the graph's shape; nullptr: a padding slot).
  void submit_encode(DecodeGraph& graph, std::span<const std::vector<int32_t>* const> slots);
  // Encodes one sentence into slot `slot` of the graph's batch, beside those decoding: a
  // BatchingSession's sentence joining its running batch.
  void submit_encode_slot(DecodeGraph& graph, uint32_t slot, const std::vector<int32_t>& pieces);
  // Source tokens of `pieces` as a batch holds them: cut to max_len - 1, then EOS.
  uint32_t source_tokens(const std::vector<int32_t>& pieces) const;
  // The search over the graph's encoded batch (greedy for beam 1).
  std::unique_ptr<Search> make_search(const DecodeGraph& graph,
                                      std::span<const uint32_t> max_out) const;
  // The search of one sentence of a batch of `shape` (its beam's rows), at most max_out long.
  std::unique_ptr<Search> make_sentence_search(const DecodeShape& shape, uint32_t max_out) const;

  Device& dev_;
  const DeviceWeights& params_;
  ModelConfig config_;
  TranslateOptions options_;
  struct CachedGraph {
    std::unique_ptr<DecodeGraph> graph;
    uint64_t used = 0;  // use_clock_ at its last use
  };
  std::map<DecodeShape, CachedGraph> graphs_;
  uint64_t use_clock_ = 0;
  size_t max_graphs_;  // shapes kept recorded (a BatchingSession keeps more)
  TranslateStats stats_;
  bool job_open_ = false;
};

}  // namespace vkf::model::decode
