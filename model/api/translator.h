#pragma once
// vkf::Translator: a trained checkpoint and its vocabulary on a device, translating text. The
// inference API a host application embeds (CTranslate2's shape: a model path and a device, then
// a batch of strings). The device is the host's own (Device::adopt) or one the engine created,
// and must outlive the translator. Only the weights go to the device (no gradients, no optimizer
// state), plus the decoder's buffers per recorded batch shape.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"
#include "model/decode/text.h"
#include "model/decode/translation_job.h"
#include "model/precision.h"
#include "model/tuning.h"

namespace vkf {

struct TranslatorOptions {
  uint32_t beam = 4;         // 1 = greedy
  float alpha = 0.6f;        // length penalty ((5 + len) / 6)^alpha; 0 = raw log-probability
  float max_len_a = 1.0f;    // maximum output length (EOS included) = a * source length + b,
  int max_len_b = 50;        // capped by the model's positions
  uint32_t nbest = 1;        // hypotheses per sentence, <= beam
  uint32_t batch_size = 32;  // sentences decoded at once (each takes `beam` rows)
  // A BatchSession's batches open with at least this many slots (0: 4 on a GPU, 1 on a CPU
  // device), so that lines arriving while few decode can join them.
  uint32_t session_min_slots = 0;
  std::string vocab;   // SentencePiece model; "" = the one the checkpoint names, beside it
  bool timed = false;  // GPU timestamps per step, for TranslationSteps' reports
  // fp16: the weights on the device in fp16 (half the memory) and fp16 activations, with fp32
  // arithmetic; automatic: fp16 on a GPU with 16-bit storage, fp32 on CPU devices.
  model::PrecisionChoice precision = model::PrecisionChoice::automatic;
  // Which kernel configurations the device runs, as `vkf translate --tune`: "auto" (the device's
  // tuning file in its pipeline cache directory, made by a tuning run of budget_seconds over the
  // problems this translator runs where there is none), "off" (the static tables) or a tuning
  // file. Default "": the device's tuning is left as the host set it. It applies to the device,
  // so to every translator on it.
  model::TuningChoice tuning;

  // Throws vkf::Error for a value out of range.
  void validate() const;
};

// One line's result: its n-best texts (best first, with length-normalised log-probabilities),
// empty for an empty or invalid-UTF-8 line; `truncated` when it was longer than the model's
// positions and only its start was translated.
using Translation = model::decode::LineTranslation;
using StepReport = model::decode::StepReport;

// A translation the host drives across frames (Translator::start). step() runs one unit of
// device work (a batch's encoder pass or one decoder step) to its end; poll() never blocks: it
// collects a finished unit and submits the next, so the device works between the host's calls;
// run_for() spends at most about a time budget (at least one unit). take_report() says what the
// calls since the last report cost: host time inside them and, with TranslatorOptions::timed,
// GPU time. The results equal Translator::translate's.
class TranslationSteps {
 public:
  TranslationSteps(TranslationSteps&&) noexcept;
  ~TranslationSteps();

  bool done() const;
  bool step();                                         // false once done
  bool poll();                                         // true once done
  bool run_for(std::chrono::duration<double> budget);  // true once done
  uint64_t sentences() const;
  StepReport take_report();
  // Once done(): one Translation per input line, in input order.
  std::vector<Translation> results();

 private:
  friend class Translator;
  struct Impl;
  explicit TranslationSteps(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Sentences of many requests decoded together, for a service or any host that translates for
// many clients: submit() queues a request's lines, step() runs one unit of device work (a
// batch's encoder pass or one decoder step), take_finished() hands back the requests whose lines
// are all translated. Waiting lines join the running batch, oldest first, at the step boundary
// where a line before them finishes and frees its slot (in-flight batching); a line too long for
// the running batch's shape waits for the next batch, and later lines do not pass it. cancel()
// drops a request and frees its slots at once. Each line's translation equals
// Translator::translate's up to the rounding that another batch shape can move
// (model/decode/batching_session.h). One session or job at a time per translator, not shared
// between threads; it must not outlive it.
class BatchSession {
 public:
  using Id = uint64_t;
  struct Finished {
    Id id = 0;
    std::vector<Translation> translations;  // one per submitted line, in order
  };
  BatchSession(BatchSession&&) noexcept;
  ~BatchSession();

  // max_length (> 0): this request's limit on each line's output length in tokens (EOS
  // included), below the translator's max_len_a/b. Returns its id, never 0.
  Id submit(const std::vector<std::string>& lines, uint32_t max_length = 0);
  bool cancel(Id id);  // false: unknown or already finished
  bool step();         // false when there was nothing to do
  bool idle() const;   // nothing waiting or running
  std::vector<Finished> take_finished();
  size_t waiting_lines() const;
  uint32_t running_lines() const;
  // Lines in each batch started since the previous call.
  std::vector<uint32_t> take_batch_sizes();
  // Running totals since the session opened: lines that joined a batch already decoding,
  // decoder steps, and lines decoding summed over those steps (their mean batch).
  struct Counts {
    uint64_t joined_lines = 0;
    uint64_t decoder_steps = 0;
    uint64_t step_lines = 0;
  };
  Counts counts() const;
  // Output tokens (EOS included) of the best hypotheses so far, for throughput figures.
  uint64_t output_tokens() const;

 private:
  friend class Translator;
  struct Impl;
  explicit BatchSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Translator {
 public:
  // model: a checkpoint file, or a directory (its latest checkpoint). Throws vkf::Error when the
  // checkpoint or its vocabulary is missing or unreadable, OutOfMemoryError when the weights do
  // not fit the device (or its memory cap).
  Translator(Device& device, const std::string& model, const TranslatorOptions& options = {});
  ~Translator();
  Translator(const Translator&) = delete;
  Translator& operator=(const Translator&) = delete;

  // One Translation per line, in order (blocking).
  std::vector<Translation> translate(const std::vector<std::string>& lines);
  // The same as steps the host drives. One at a time per translator; it must not outlive it.
  TranslationSteps start(const std::vector<std::string>& lines);
  // Batching across requests (see BatchSession). It must not outlive the translator.
  BatchSession open_session();

  Device& device() const;
  const std::string& checkpoint() const;  // the file loaded
  const std::string& tuning() const;      // "tuned (FILE)", "default (why)", ...
  uint64_t weight_bytes() const;          // device memory of the weights
  // Buffers of the batch shapes recorded so far (K/V caches, activations, inputs, outputs).
  uint64_t cache_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
