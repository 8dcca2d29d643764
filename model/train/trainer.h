#pragma once
// The training loop behind `vkf train`: reads and batches the corpus, replays one recorded step
// per bucket shape, accumulates gradients over micro-batches, applies Adam, validates, writes
// checkpoints (with the optimizer state that makes a run resumable bit for bit), and reports
// progress. The caller owns the device; the command line lives in apps/vkf/cmd_train.cpp.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/exchange/process_group.h"
#include "engine/ops/adam.h"
#include "model/config.h"
#include "model/data/batcher.h"
#include "model/data/line_reader.h"
#include "model/data/parallel_text.h"
#include "model/precision.h"
#include "model/train/loss_scale.h"
#include "model/train/output_lock.h"
#include "model/tuning.h"

namespace vkf::model {

struct TrainerOptions {
  // Architecture and regularisation; vocab_size, tokenizer and tokenizer_sha256 are filled in
  // from the vocabulary.
  ModelConfig config = ModelConfig::preset("base");
  CorpusFiles train;
  std::optional<CorpusFiles> valid;
  std::string vocab;    // an existing SentencePiece model (the command trains one if missing)
  std::string out_dir;  // checkpoints, the vocabulary copy and train.jsonl

  int max_sequence_len = 256;  // longer pairs are skipped (and counted)
  BatcherOptions batching;     // max_tokens per side per micro-batch, buckets, seed ignored
  int accumulate = 1;          // micro-batches summed into one optimizer step

  // Stop at whichever limit comes first; 0 means no limit (one of the three must be set).
  uint64_t max_steps = 0;
  uint64_t max_epochs = 0;
  double max_seconds = 0;

  uint64_t seed = 1;
  ops::AdamOptions adam;  // schedule, factor, warm-up, clipping; d_model is set from config
  // Mixed precision (issue 15): fp16 copies of the weights, fp16 activations and activation
  // gradients, fp32 master weights, Adam state and accumulation, dynamic loss scaling (a
  // non-finite gradient skips the step and halves the scale; loss_scale_window clean steps
  // double it). automatic: fp16 on GPUs with 16-bit storage, fp32 on CPU devices.
  PrecisionChoice precision = PrecisionChoice::fp32;
  uint32_t loss_scale_window = LossScale::k_window;
  // Kernel tuning of every device (model/tuning.h), applied once the precision is resolved, for
  // the problems the model states at this run's batches (model/op_problems.h). `tuning_note`
  // hears what it did ("kernels tuned (FILE)", "kernels default (why)") and the notes on the way.
  TuningChoice tuning;
  std::function<void(const std::string&)> tuning_note;

  uint64_t log_every = 10;        // steps between progress lines
  uint64_t valid_every = 0;       // steps between validations (0: only at the end)
  uint64_t save_every = 0;        // steps between checkpoints (0: by time or at the end only)
  double save_every_minutes = 0;  // minutes between checkpoints (0: by steps only)
  int keep_checkpoints = 5;       // the last N are kept (averaging uses the last 5)
  bool resume = false;            // continue from the latest checkpoint in out_dir

  // Data parallel (several devices, or several processes with `group`): each replica takes a
  // share of every batch, gradients are summed across replicas before the (identical) update.
  // Shares are equal for the first `balance_after` steps, then follow each replica's measured
  // throughput when `balance` is on (a fast GPU beside a slow one); the update stays the mean
  // over all tokens whatever the shares.
  bool balance = true;
  uint64_t balance_after = 20;
  ProcessGroup* group = nullptr;  // MPI world; rank 0 writes checkpoints and logs
  // Gradient exchange between replicas: overlapped with the backward (each layer's gradients go
  // as soon as its backward is done), or after it (same bits; for comparison and benchmarks).
  enum class Exchange { overlapped, after_backward };
  Exchange exchange = Exchange::overlapped;

  std::FILE* progress = stderr;  // null: quiet
  // Set (from a signal handler) to stop: looked at before every micro-batch. A step that is
  // partly accumulated is dropped (gradients zeroed, data rewound), then the run writes a
  // checkpoint of the last whole step, so a resumed run still matches an uninterrupted one.
  const std::atomic<bool>* stop_requested = nullptr;
  // The caller's lock on out_dir (cmd_train takes it before it trains a vocabulary there);
  // null: train() takes it. Only the leader (rank 0) holds one.
  const OutputLock* held_lock = nullptr;
  // Longer corpus lines are skipped and counted, like invalid UTF-8 ones.
  uint64_t max_line_bytes = k_default_max_line_bytes;

  void validate() const;
};

// What only tests set, to stand for conditions they cannot otherwise bring about; passed to
// train() by tests alone.
struct TrainTestHooks {
  // Shares of every batch per global replica until balancing sets them (empty: equal): devices
  // of different speeds.
  std::vector<double> initial_shares;
  // Largest parameter buffer (0: what the device binds): several chunks on any device.
  uint64_t max_param_chunk_bytes = 0;
  // Called before each replica's share of a micro-batch is submitted, with the step and the
  // replica's global index: a test throws DeviceLostError from it to stand for a lost device.
  std::function<void(uint64_t step, int replica)> before_submit;
  // A stop request arrives after this many micro-batches of this invocation (0: never).
  uint64_t stop_after_micro_batches = 0;
  // True for a step: an Inf is written into its accumulated gradients before the optimizer
  // runs, standing for an fp16 overflow.
  std::function<bool(uint64_t step)> nonfinite_gradient;
};

struct ValidationResult {
  double loss_per_token = 0;  // label-smoothed
  double nll_per_token = 0;
  uint64_t tokens = 0;
  double perplexity() const;
};

struct TrainSummary {
  uint64_t steps = 0;  // the step the run ended at (counting resumed steps)
  uint64_t epoch = 0;
  std::string last_checkpoint;
  std::optional<ValidationResult> first_valid, last_valid;
  double train_loss_per_token = 0;        // over the last logging interval
  double tokens_per_second = 0;           // source + target, over this invocation
  bool interrupted = false;               // stopped by stop_requested
  uint64_t peak_pool_bytes = 0;           // activation memory held by the recorded graphs
  double exchange_seconds = 0;            // gradient exchange the steps waited for, this invocation
  double step_seconds = 0;                // whole steps, this invocation
  std::vector<double> replica_rows;       // sentences trained by each replica of this process
  Precision precision = Precision::fp32;  // what the run took
  LossScale loss_scale;                   // where the scale ended, and the skipped steps
};

// The refusals that depend on --out and --resume alone (a run's checkpoints without --resume,
// --resume without checkpoints), for callers that do slow work before train(). train() checks
// them again, under the lock.
void check_output_dir(const TrainerOptions& options);

// Trains; throws vkf::Error on bad input, on a non-finite loss (after leaving the last good
// checkpoint in place) and on device errors.
TrainSummary train(Device& dev, const TrainerOptions& options, const TrainTestHooks& hooks = {});
// One replica per device (the same device may appear several times: logical devices).
TrainSummary train(const std::vector<Device*>& devices, const TrainerOptions& options,
                   const TrainTestHooks& hooks = {});

}  // namespace vkf::model
