#pragma once
// The translation side of `vkf serve`: one worker thread owns the model and its BatchSession
// (model/api/translator.h) and drives it step by step; HTTP threads submit requests and wait on
// their tickets. Between steps the worker takes the new requests into the session and drops the
// cancelled ones; the session lets a request's lines join the running batch as slots free up. A
// reload loads the new checkpoint once the requests already in the session have finished (new ones
// wait meanwhile, none is dropped); a checkpoint that fails to load is refused and the old model
// keeps serving.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/api/translator.h"

namespace vkf::serve {

struct ServiceOptions {
  std::string model;
  TranslatorOptions translator;
  size_t queue_limit = 1024;  // lines accepted and not yet translated; more: refused (HTTP 429)
  // How long a batch about to start with room to spare waits for more lines (0: not at all).
  std::chrono::microseconds batch_window{2000};
};

// One request's wait. The HTTP thread waits on it; the worker fills it in.
struct Ticket {
  std::vector<std::string> lines;
  uint32_t max_length = 0;  // the request's output limit per line (0: the server's)
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  bool cancelled = false;
  std::string error;               // set when the translation failed (done is then true too)
  std::vector<std::string> texts;  // one per line
  // Waits up to `timeout`; true once done.
  bool wait_for(std::chrono::milliseconds timeout);
};

// What the batching did, for /metrics (running totals).
struct ServiceStats {
  size_t waiting_lines = 0;  // in the queue, not yet in a batch
  uint32_t running_lines = 0;
  uint64_t output_tokens = 0;
  double busy_seconds = 0;                   // time the worker spent stepping
  std::map<uint32_t, uint64_t> batch_sizes;  // lines a batch opened with -> batches
  BatchSession::Counts counts;               // joined lines, decoder steps and their lines
  uint64_t reloads_ok = 0, reloads_failed = 0;
};

class TranslationService {
 public:
  // Loads the model (throws vkf::Error when it cannot) and starts the worker. The first
  // translator applies options.translator.tuning to the device before it records its decoder;
  // a reload leaves the device's tuning as it is.
  TranslationService(Device& device, const ServiceOptions& options);
  ~TranslationService();  // finishes every accepted request, then stops the worker

  // nullptr when the queue would pass its limit (the caller answers 429).
  // max_length: the request's limit on each line's output length (0: the server's alone).
  std::shared_ptr<Ticket> submit(std::vector<std::string> lines, uint32_t max_length = 0);
  // The client went away: its lines leave the queue or their batch.
  void cancel(const std::shared_ptr<Ticket>& ticket);
  // Loads `path` ("" = the current checkpoint path again) in place of the model, between
  // batches. Blocks until done; returns "" on success, else why it was refused.
  std::string reload(const std::string& path);
  // Stops taking requests (submit returns nullptr) and waits until the accepted ones are done.
  void drain();

  ServiceStats stats() const;
  std::string checkpoint() const;
  bool healthy() const;
  // What the tuning choice did: "tuned (FILE)", "default (why)", "as set on the device".
  const std::string& tuning() const { return tuning_; }

 private:
  struct Reload {
    std::string path;
    std::string error;
    bool done = false;
  };
  void run();
  void take_inbox();  // under mutex_
  void finish(const std::vector<BatchSession::Finished>& finished);
  void fail_all(const std::string& why);
  void do_reload(Reload& r);

  Device& device_;
  ServiceOptions options_;
  std::unique_ptr<Translator> translator_;
  std::string tuning_;
  std::optional<BatchSession> session_;
  std::map<BatchSession::Id, std::shared_ptr<Ticket>> open_;  // worker thread only
  // Output tokens and counts of the sessions reloaded away (worker thread only).
  uint64_t token_base_ = 0;
  BatchSession::Counts counts_base_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;       // the worker waits for work
  std::condition_variable idle_cv_;  // drain() waits for pending_ to reach 0
  std::deque<std::shared_ptr<Ticket>> inbox_;
  std::vector<std::shared_ptr<Ticket>> cancels_;
  std::deque<Reload*> reloads_;
  size_t pending_lines_ = 0;  // accepted, not yet answered
  bool stopping_ = false, draining_ = false, healthy_ = true;
  std::string checkpoint_;
  ServiceStats stats_;
  std::thread worker_;
};

}  // namespace vkf::serve
