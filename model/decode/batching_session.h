#pragma once
// Sentences of many requests decoded together, for a service: requests arrive at any time and
// their sentences wait in one queue. A batch is a recorded decoding shape with `batch` sentence
// slots (each the beam's rows). The first waiting sentences open it; from then on, at every step
// boundary, a slot that a finished or cancelled sentence left takes the oldest waiting sentence,
// as in-flight batching does in LLM servers: the batch is encoded again with the newcomer in its
// slot (the others' sources are the same, so their cross-attention K/V are too) and the
// newcomer decodes from position 0 while its neighbours go on at theirs (the decoder step's
// kernels take a position and a key length per row). A short request therefore waits for a
// free slot, not for the batch to end.
//
// A sentence joins only where it fits the running shape: its source within the shape's padded
// length and its output limit within its positions. When the oldest waiting sentence does not
// fit, no later one passes it: the batch drains, ends, and the next opens with it (at most the
// running sentences' remaining output length in steps). Batches open with at least
// TranslateOptions::session_min_slots slots (4 on a GPU) and sources of k_min_session_source
// tokens, so that a lone request leaves room for most newcomers. A batch narrower than the batch
// size with more sentences waiting than free slots takes none: it drains, and a wider batch opens
// with them (a batch kept full by newcomers would otherwise never end, nor widen as clients come).
// On a CPU device, where every row costs, a batch four times wider than its running and waiting
// sentences takes none either, so that a narrower one opens. A batch with no sentence left
// closes.
//
// Each sentence runs its own search (greedy or beam) over its slot's rows; its hypotheses equal
// Translator::translate's up to the rounding that another batch shape may move (a kernel picked
// for other row counts or source lengths). A cancelled request leaves the queue and frees its
// slots at once.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "model/decode/search.h"

namespace vkf::model::decode {

class Translator;
class DecodeGraph;

// Padded source length (tokens, EOS included) a session's batch opens with at least, up to the
// model's max_len: most sentences are shorter, so most newcomers fit the running batch. Padding
// costs the encoder pass (the attention stops at each source's length).
constexpr uint32_t k_min_session_source = 64;

class BatchingSession {
 public:
  using Id = uint64_t;
  struct Finished {
    Id id = 0;
    std::vector<std::vector<Hypothesis>> results;  // per sentence, as translate() returns them
  };

  // Holds the translator (no other job or session on it) until destroyed; must not outlive it.
  explicit BatchingSession(Translator& translator);
  ~BatchingSession();
  BatchingSession(const BatchingSession&) = delete;
  BatchingSession& operator=(const BatchingSession&) = delete;

  // sources: pieces without EOS, as Translator::translate takes them. Empty sources finish at
  // once (an empty result). max_output (> 0): this request's own limit on each sentence's
  // output length (EOS included), below the translator's. Returns the request's id (never 0).
  Id submit(std::vector<std::vector<int32_t>> sources, uint32_t max_output = 0);
  // Drops a request that has not finished: its waiting sentences leave the queue, its running
  // ones free their slots (for the next step's newcomers). False when the id is unknown or
  // already finished.
  bool cancel(Id id);

  // Runs the next unit to its end (blocking): an encoder pass when a batch opens or sentences
  // join it, else a decoder step of the open batch. Returns false when there was nothing to do.
  bool step();
  bool idle() const { return waiting_.empty() && running_sentences() == 0; }
  // Requests finished since the previous call, in the order they finished.
  std::vector<Finished> take_finished();

  size_t waiting_sentences() const { return waiting_.size(); }
  uint32_t running_sentences() const;
  size_t open_requests() const { return requests_.size(); }
  // Sentences in each batch started since the previous call.
  std::vector<uint32_t> take_batch_sizes();
  // Running totals since the session opened.
  struct Counts {
    uint64_t joined = 0;          // sentences that joined a batch already decoding
    uint64_t decoder_steps = 0;   // decoder steps run
    uint64_t step_sentences = 0;  // sentences decoding, summed over those steps
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Request {
    std::vector<std::vector<int32_t>> sources;
    std::vector<std::vector<Hypothesis>> results;
    size_t remaining = 0;
    uint32_t max_output = 0;  // 0: the translator's limit alone
  };
  struct Sentence {
    Id id;
    size_t index;  // in its request
  };
  struct Running {  // a slot's sentence and its search over the slot's rows
    Sentence sentence;
    std::unique_ptr<Search> search;
  };
  const std::vector<int32_t>& source(const Sentence& s) const;
  // A sentence's output limit: the translator's for `limit` (its source), or its request's.
  uint32_t output_limit(const Sentence& s, uint32_t limit) const;
  uint32_t min_slots() const;  // a batch's slots at least
  void start_batch();
  bool admit();  // fills free slots from the queue; true when it encoded
  void decode_step();
  void close_batch();
  void finish_sentence(const Sentence& s, std::vector<Hypothesis> found);

  Translator* translator_;
  std::map<Id, Request> requests_;
  std::deque<Sentence> waiting_;
  std::vector<std::optional<Running>> slots_;  // of the open batch
  std::vector<Finished> finished_;
  std::vector<uint32_t> batch_sizes_;
  Id next_id_ = 1;
  Counts counts_;
  std::vector<int32_t> step_positions_, step_tokens_, step_origin_;  // decode_step's inputs
  DecodeGraph* graph_ = nullptr;  // the open batch's; null when none is open
};

}  // namespace vkf::model::decode
