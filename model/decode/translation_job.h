#pragma once
// One Translator::translate() call as work the host drives, so that a game can spread a
// translation over its frames: each unit of device work is one batch's encoder pass or one
// decoder step. step() runs a unit to the end; poll() never blocks: it collects the unit in
// flight if the device has finished it and submits the next one, so the device works while the
// host renders; run_for() runs units until a time budget is spent. All three give the same
// results as translate(), which is this job run to the end with step().
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/decode/search.h"

namespace vkf::model::decode {

class Translator;
class DecodeGraph;

// What the calls since the previous report did (TranslationJob::take_report()).
struct StepReport {
  uint32_t units = 0;      // encoder passes and decoder steps collected
  double host_ms = 0;      // time spent inside the job's calls (waiting included)
  double gpu_ms = 0;       // GPU time of the collected units (timed translators; else 0)
  uint64_t sentences = 0;  // sentences finished so far, of sentences()
};

class TranslationJob {
 public:
  ~TranslationJob();
  TranslationJob(TranslationJob&&) noexcept;
  TranslationJob& operator=(TranslationJob&&) = delete;

  bool done() const;
  // Runs the next unit to its end (blocking). Returns false once the job is done.
  bool step();
  // Never blocks: collects the unit in flight if it has finished, then submits the next one.
  // Returns true once the job is done.
  bool poll();
  // Runs units (blocking) until `budget` is spent or the job is done; at least one unit, so a
  // small budget still makes progress. Returns true once the job is done.
  bool run_for(std::chrono::duration<double> budget);

  uint64_t sentences() const { return sentences_; }
  // Counters since the previous call; sentences is the running total.
  StepReport take_report();
  // Per sentence, as Translator::translate returns them (once done()).
  std::vector<std::vector<Hypothesis>> take_results();

 private:
  friend class Translator;
  TranslationJob(Translator& translator, const std::vector<std::vector<int32_t>>& sources,
                 std::function<void(uint64_t)> progress);
  void submit_next();
  void collect();
  void start_batch();
  void finish_batch();
  // Once done, the translator is free for another job (this one still holds its results).
  void release_if_done();

  Translator* translator_ = nullptr;
  std::vector<std::vector<int32_t>> sources_;
  std::function<void(uint64_t)> progress_;
  std::vector<std::vector<Hypothesis>> results_;
  std::vector<size_t> order_;  // non-empty sources, longest first
  uint64_t sentences_ = 0;
  uint64_t finished_ = 0;
  uint32_t batch_ = 0;  // sentences per batch
  size_t begin_ = 0;    // first sentence (in order_) of the current batch
  uint32_t n_ = 0;      // sentences in the current batch
  DecodeGraph* graph_ = nullptr;
  std::unique_ptr<Search> search_;  // null while the batch's encoder pass runs
  std::vector<uint32_t> max_out_;
  bool in_flight_ = false;
  bool batch_open_ = false;
  StepReport report_;
};

}  // namespace vkf::model::decode
