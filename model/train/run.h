#pragma once
// The training run behind train() (model/train/trainer.h), one object per call. Its parts live in
// three files: run_setup.cpp (everything before the first step: checks, resume, data, replicas),
// run_step.cpp (one optimizer step across the replicas and processes) and trainer.cpp (the step
// loop and what it does between steps: the interval log, validation, checkpoints, the summary).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/exchange/gradient_exchange.h"
#include "engine/step_scalars.h"
#include "model/data/tokenizer.h"
#include "model/device_params.h"
#include "model/optimizer.h"
#include "model/train/output_lock.h"
#include "model/train/progress.h"
#include "model/train/train_state.h"
#include "model/train/trainer.h"
#include "model/train_graph.h"

namespace vkf::model::training {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Graphs by bucket shape, recorded on first use, sharing one activation pool.
class GraphCache {
 public:
  GraphCache(Device& dev, DeviceParams& params, const BufferRef& scalars, GraphOptions options)
      : dev_(dev), params_(params), scalars_(scalars), options_(std::move(options)) {}
  TrainGraph& get(int batch, int src_len, int tgt_len);
  size_t size() const { return graphs_.size(); }

 private:
  Device& dev_;
  DeviceParams& params_;
  BufferRef scalars_;
  GraphOptions options_;
  std::map<BucketShape, std::unique_ptr<TrainGraph>> graphs_;
};

// One data-parallel replica: a device with its own copy of the parameters, optimizer state,
// per-step scalars, activations and recorded graphs.
struct Replica {
  Device* dev = nullptr;
  int global_index = 0;
  std::unique_ptr<DeviceParams> params;
  Buffer scalars;
  StepScalars* sc = nullptr;
  std::shared_ptr<ActivationPool> pool;
  std::unique_ptr<GraphCache> train_graphs, valid_graphs;
  std::unique_ptr<Optimizer> optimizer;
  // Throughput for balancing: rows trained and seconds from submit to completion.
  double rows_done = 0, busy_seconds = 0;
};

// What a step adds up: this process's loss, NLL and target tokens, then (sum_across) every
// process's, with the two decisions all processes must take alike.
struct StepTotals {
  double loss = 0;              // label-smoothed, over non-pad targets
  double nll = 0;               // plain negative log-likelihood
  double tokens = 0;            // non-pad targets
  bool stop_requested = false;  // by any process (a signal, or the test hook)
  bool save_due = false;        // a checkpoint is due by the leader's clock
  StepTotals& operator+=(const StepTotals& o) {
    loss += o.loss;
    nll += o.nll;
    tokens += o.tokens;
    return *this;
  }
  // Sums over the processes of `group` (null: this process alone), flattened for the MPI sum.
  void sum_across(ProcessGroup* group);
};

// The numbers of one logging interval.
struct Interval {
  double loss = 0, nll = 0, exchange_seconds = 0;
  uint64_t tokens = 0, steps = 0;
  uint64_t skipped = 0;  // fp16 steps skipped for a non-finite gradient
  Clock::time_point start = Clock::now();
};

class Run {
 public:
  Run(const std::vector<Device*>& devices, const TrainerOptions& o, const TrainTestHooks& hooks)
      : devices_(devices), o_(o), hooks_(hooks) {}
  TrainSummary go();

 private:
  bool leader() const { return !o_.group || o_.group->rank() == 0; }
  int world() const { return int(replicas_.size()) * (o_.group ? o_.group->size() : 1); }
  void say(const std::string& line) {
    if (o_.progress && leader()) {
      std::fprintf(o_.progress, "%s\n", line.c_str());
      std::fflush(o_.progress);
    }
  }
  void log(const nlohmann::json& record) {
    if (log_) log_->write(record);
  }
  void sum_across_processes(std::vector<double>& v) {
    if (o_.group) o_.group->sum(v.data(), v.size());
  }

  // go()'s parts, in order (trainer.cpp; prepare() in run_setup.cpp).
  void prepare();
  bool step_loop(TrainSummary& summary);  // true: stopped by a request
  void log_interval(uint64_t step, const Optimizer::Result& opt, double elapsed,
                    TrainSummary& summary);
  void run_validation(bool first, TrainSummary& summary);
  void finish(bool interrupted, TrainSummary& summary);

  // Before the first step (run_setup.cpp).
  ExampleStore read(const CorpusFiles& files, const char* what);
  std::vector<float> start_or_resume(TrainState& resumed);
  BatcherOptions make_batchers();
  void setup_replicas(const std::vector<float>& initial, const TrainState& resumed);
  void announce(const BatcherOptions& bo);

  // One step (run_step.cpp).
  struct StepOutcome {
    // Stopped by a request before the step's micro-batch `dropped`: the micro-batches before it
    // were undone (gradients zeroed, data stream rewound), so the step never happened.
    bool abandoned = false;
    int dropped = 0;
    StepTotals totals;       // summed across processes
    uint64_t io_tokens = 0;  // source + target tokens of this process
    Optimizer::Result opt;
    double exchange_seconds = 0;  // gradient exchange the step waited for
  };
  StepOutcome train_step(uint64_t step, bool save_due);
  bool stop_agreed();
  bool stop_requested_here() const;
  // One micro-batch on every replica; returns the loss, NLL and tokens of this process. With
  // `exchange` (the step's last micro-batch, exchange overlapped) the gradients are summed
  // across replicas layer by layer as the backward finishes them; finish() on every exchange
  // then completes the step's exchange.
  StepTotals run_micro_batch(const Batch& b, uint64_t step, int micro, bool exchange);
  // Per segment of `g`, the (exchange, bucket) pairs its completion makes final.
  const std::vector<std::vector<std::pair<size_t, size_t>>>& downloads_after_segment(
      const TrainGraph& g);
  void rebalance();

  // Between steps (trainer.cpp).
  ValidationResult validate();
  std::string save();
  void check_replicas_identical();
  std::string last_good() const;
  double lr_at(uint64_t step) const;
  bool should_stop(double elapsed) const;
  double fraction_done(double elapsed) const;

  std::vector<Device*> devices_;
  TrainerOptions o_;
  TrainTestHooks hooks_;
  std::optional<OutputLock> lock_;  // held from the first check to the end of the run
  std::string resumed_from_;
  uint64_t micro_batches_run_ = 0;
  std::optional<Tokenizer> tok_;
  ModelConfig config_;
  ExampleStore train_store_, valid_store_;
  std::unique_ptr<Batcher> train_batcher_, valid_batcher_;
  std::vector<Replica> replicas_;
  std::vector<double> weights_;  // share of every batch, per global replica
  std::vector<std::unique_ptr<GradientExchange>> exchanges_;
  std::map<const TrainGraph*, std::vector<std::vector<std::pair<size_t, size_t>>>> download_plans_;
  Clock::time_point last_backward_done_;  // when the last replica's graph was seen finished
  std::unique_ptr<BatchStream> stream_;
  std::unique_ptr<JsonlLog> log_;
  TrainState state_;  // with the loss scale (fp16)
  Precision precision_ = Precision::fp32;
  // The factor the loss gradient is multiplied by: the dynamic scale in fp16, 1 in fp32.
  float loss_scale() const {
    return precision_ == Precision::fp16 ? state_.loss_scale.scale : 1.0f;
  }
  uint64_t saved_step_ = 0;
  Clock::time_point started_;
  double elapsed_before_ = 0;  // from earlier parts of a resumed run
  // The step loop's bookkeeping.
  Interval interval_;
  uint64_t first_step_ = 0;  // the step this invocation started from
  uint64_t run_tokens_ = 0;  // source + target tokens of this process, this invocation
  Clock::time_point last_save_;
};

}  // namespace vkf::model::training
