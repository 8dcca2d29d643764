#pragma once
// Sentences of many requests decoded together, for a service: requests arrive at any time and
// their sentences wait in one queue; each batch is formed from the waiting sentences (oldest
// first) when the batch before it ends, and decoded by the same encoder pass, search and graphs
// as Translator::translate, so a sentence's hypotheses equal translate()'s up to the rounding
// that a different batch shape may move (a kernel picked for other row counts). The host drives
// it one unit (an encoder pass or a decoder step) at a time, as a TranslationJob.
//
// What it does not do: a sentence cannot join a batch whose decoding has started. The decoder
// steps all rows at one position t (one recorded graph per shape, positions shared by the rows),
// so a newcomer at position 0 would need per-row positions in the step's kernels. A request that
// arrives mid-batch therefore waits for the running batch to end (at most its longest
// sentence's output length in steps), then joins the next one.
//
// A cancelled request leaves the queue at once; if it has sentences in the running batch, they
// are discarded when it ends, and a batch whose sentences are all cancelled stops at the next
// step boundary, freeing the device for the waiting ones.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "model/decode/search.h"

namespace vkf::model::decode {

class Translator;
class DecodeGraph;

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
  // once (an empty result). Returns the request's id (never 0).
  Id submit(std::vector<std::vector<int32_t>> sources);
  // Drops a request that has not finished: its waiting sentences leave the queue, its running
  // ones are discarded. False when the id is unknown or already finished.
  bool cancel(Id id);

  // Runs the next unit to its end (blocking): the next batch's encoder pass when none is open,
  // else a decoder step. Returns false when there was nothing to do.
  bool step();
  bool idle() const { return !open_ && waiting_.empty(); }
  // Requests finished since the previous call, in the order they finished.
  std::vector<Finished> take_finished();

  size_t waiting_sentences() const { return waiting_.size(); }
  uint32_t running_sentences() const { return uint32_t(running_.size()); }
  size_t open_requests() const { return requests_.size(); }
  // Sentences in each batch started since the previous call.
  std::vector<uint32_t> take_batch_sizes();

 private:
  struct Request {
    std::vector<std::vector<int32_t>> sources;
    std::vector<std::vector<Hypothesis>> results;
    size_t remaining = 0;
    bool cancelled = false;
  };
  struct Slot {
    Id id;
    size_t sentence;
  };
  void start_batch();
  void collect();
  void finish_batch();
  void close_batch();
  void finish_sentence(const Slot& slot, std::vector<Hypothesis> found);

  Translator* translator_;
  std::map<Id, Request> requests_;
  std::deque<Slot> waiting_;
  std::vector<Slot> running_;
  std::vector<Finished> finished_;
  std::vector<uint32_t> batch_sizes_;
  Id next_id_ = 1;
  DecodeGraph* graph_ = nullptr;
  std::unique_ptr<Search> search_;
  std::vector<uint32_t> max_out_;
  bool open_ = false;
};

}  // namespace vkf::model::decode
