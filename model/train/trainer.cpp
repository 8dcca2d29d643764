// train(): the run's step loop and what it does between steps (the interval log, validation,
// checkpoints, the final summary). Setting up is in run_setup.cpp, one step in run_step.cpp.
#include "model/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "model/checkpoint.h"
#include "model/params.h"
#include "model/train/run.h"
#include "model/train/schedule.h"

namespace fs = std::filesystem;

namespace vkf::model {

void TrainerOptions::validate() const {
  if (out_dir.empty()) throw Error("training needs an output directory (--out DIR)");
  if (vocab.empty()) throw Error("training needs a vocabulary (--vocab FILE.model)");
  if (accumulate < 1) throw Error("--accumulate must be at least 1");
  if (max_steps == 0 && max_epochs == 0 && max_seconds <= 0)
    throw Error("give a limit: --max-steps, --max-epochs or --max-time");
  if (max_sequence_len < 2) throw Error("--max-len must be at least 2");
  if (max_sequence_len > config.max_len)
    throw Error("--max-len " + std::to_string(max_sequence_len) + " exceeds the model's max_len " +
                std::to_string(config.max_len));
  if (keep_checkpoints < 1) throw Error("--keep-checkpoints must be at least 1");
  if (log_every == 0) throw Error("--log-every must be at least 1");
  // Adam's own checks would catch some of these on the device; a negative rate would not: it
  // trains, diverging, for as long as it is let.
  if (!(std::isfinite(adam.lr) && adam.lr > 0)) throw Error("--lr must be a positive number");
  if (!(adam.warmup_steps >= 1)) throw Error("--warmup-steps must be at least 1");
  if (!(std::isfinite(adam.max_grad_norm) && adam.max_grad_norm >= 0))
    throw Error("--clip-norm must be a number >= 0");
  if (!(adam.beta2 >= 0 && adam.beta2 < 1)) throw Error("--beta2 must be in [0, 1)");
  if (!(std::isfinite(save_every_minutes) && save_every_minutes >= 0))
    throw Error("--save-every-minutes must be a number >= 0");
  if (max_line_bytes < 1) throw Error("--max-line-bytes must be at least 1");
  batching.validate();
}

double ValidationResult::perplexity() const {
  return std::exp(std::min(nll_per_token, 50.0));
}

namespace training {
namespace {

BatchTokens tokens_of(const Batch& b) {
  return {b.src, b.tgt_in, b.tgt_out, b.src_lengths, b.tgt_lengths};
}

// FNV-1a of the parameters' bytes: replicas must stay identical.
uint64_t bytes_hash(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace

double Run::lr_at(uint64_t step) const {
  if (o_.adam.schedule == ops::LrSchedule::constant) return o_.adam.lr;
  Schedule s{config_.d_model, int(o_.adam.warmup_steps), o_.adam.lr};
  return s.lr(step);
}

bool Run::should_stop(double elapsed) const {
  if (o_.max_steps && state_.step >= o_.max_steps) return true;
  if (o_.max_epochs && stream_->position().epoch >= o_.max_epochs) return true;
  if (o_.max_seconds > 0 && elapsed >= o_.max_seconds) return true;
  return false;
}

double Run::fraction_done(double elapsed) const {
  double f = 0;
  if (o_.max_steps) f = std::max(f, double(state_.step) / double(o_.max_steps));
  if (o_.max_epochs) {
    const auto pos = stream_->position();
    f = std::max(
        f, (double(pos.epoch) + double(pos.batch) / double(train_batcher_->batches_per_epoch())) /
               double(o_.max_epochs));
  }
  if (o_.max_seconds > 0) f = std::max(f, elapsed / o_.max_seconds);
  return std::min(f, 1.0);
}

std::string Run::last_good() const {
  return saved_step_ > 0 ? "the last good checkpoint is " +
                               (fs::path(o_.out_dir) / checkpoint_name(saved_step_)).string()
                         : std::string("no checkpoint was written yet");
}

ValidationResult Run::validate() {
  ValidationResult v;
  double loss = 0, nll = 0;
  Replica& r = replicas_[0];
  EpochPlan plan = valid_batcher_->plan(0);
  for (size_t i = 0; i < plan.size(); ++i) {
    Batch b = valid_batcher_->make_batch(plan, i);
    TrainGraph& g = r.valid_graphs->get(b.batch_size, b.src_len, b.tgt_len);
    g.set_batch(tokens_of(b));
    StepResult res = g.run();
    loss += res.loss_sum;
    nll += res.nll_sum;
    v.tokens += res.tokens;
  }
  v.loss_per_token = loss / double(std::max<uint64_t>(v.tokens, 1));
  v.nll_per_token = nll / double(std::max<uint64_t>(v.tokens, 1));
  return v;
}

void Run::check_replicas_identical() {
  if (world() == 1) return;
  std::vector<double> hashes(size_t(world()) * 2, 0.0);
  for (Replica& r : replicas_) {
    const uint64_t h = bytes_hash(r.params->download());
    hashes[2 * size_t(r.global_index)] = double(h >> 32);
    hashes[2 * size_t(r.global_index) + 1] = double(h & 0xffffffffu);
  }
  sum_across_processes(hashes);
  for (size_t g = 1; g < size_t(world()); ++g)
    if (hashes[2 * g] != hashes[0] || hashes[2 * g + 1] != hashes[1])
      throw Error("replica " + std::to_string(g) +
                  " no longer holds the same parameters as replica 0 at step " +
                  std::to_string(state_.step) + " (devices computing differently?); " +
                  last_good());
}

std::string Run::save() {
  check_replicas_identical();
  const fs::path dir(o_.out_dir);
  const std::string path = (dir / checkpoint_name(state_.step)).string();
  if (leader()) {
    Replica& r = replicas_[0];
    state_.position = stream_->position();
    state_.elapsed_seconds = elapsed_before_ + seconds_since(started_);
    state_.adam_m = r.params->download_m();
    state_.adam_v = r.params->download_v();
    const std::vector<float> params = r.params->download();
    // The state names the parameters it belongs to, so it cannot be paired with another's.
    state_.params_checksum = params_checksum(r.params->layout(), params);
    // The state first: a checkpoint that exists always has its state beside it.
    save_train_state((dir / train_state_name(state_.step)).string(), state_);
    state_.adam_m.clear();
    state_.adam_v.clear();
    save_checkpoint(path, config_, r.params->layout(), params, state_.step);
    auto all = list_checkpoints(o_.out_dir);
    for (size_t i = 0; i + size_t(o_.keep_checkpoints) < all.size(); ++i) {
      std::error_code ec;
      fs::remove(all[i].second, ec);
      fs::remove(train_state_path(all[i].second), ec);
    }
    log({{"event", "checkpoint"}, {"step", state_.step}, {"path", path}});
  }
  saved_step_ = state_.step;
  return path;
}

TrainSummary Run::go() {
  prepare();
  TrainSummary summary;
  started_ = Clock::now();
  if (o_.valid && !o_.resume) run_validation(true, summary);
  const bool interrupted = step_loop(summary);
  finish(interrupted, summary);
  return summary;
}

// Steps until a limit or a stop request; true when stopped by a request.
bool Run::step_loop(TrainSummary& summary) {
  interval_ = Interval{};
  last_save_ = Clock::now();
  first_step_ = state_.step;
  while (!should_stop(seconds_since(started_))) {
    const uint64_t step = state_.step + 1;
    const auto step_start = Clock::now();
    const bool save_due = leader() && o_.save_every_minutes > 0 &&
                          seconds_since(last_save_) >= o_.save_every_minutes * 60.0;
    const float scale_used = loss_scale();
    StepOutcome out = train_step(step, save_due);
    out.opt.grad_norm /= scale_used;  // the norm of the gradient itself, not of the scaled one
    if (out.abandoned) {
      if (out.dropped > 0)
        say("interrupted during step " + std::to_string(step) + " after " +
            std::to_string(out.dropped) + " of " + std::to_string(o_.accumulate) +
            " micro-batches: those are dropped, the run stops at step " +
            std::to_string(state_.step));
      return true;
    }
    summary.exchange_seconds += out.exchange_seconds;
    interval_.exchange_seconds += out.exchange_seconds;
    if (precision_ == Precision::fp16) {
      // Dynamic loss scaling: an overflow skips the step (the optimizer left the weights and
      // Adam's moments as they were; the batch is consumed, as in fairseq) and halves the scale.
      const bool usable = state_.loss_scale.update(out.opt.finite, o_.loss_scale_window);
      if (!out.opt.finite) {
        state_.tokens_seen += out.io_tokens;
        run_tokens_ += out.io_tokens;
        interval_.skipped++;
        if (!usable)
          throw Error("non-finite gradients at every loss scale down to " +
                      std::to_string(LossScale::k_min) + " at step " + std::to_string(step) +
                      ": the run has diverged; " + last_good());
        if (!out.totals.stop_requested) continue;
        return true;
      }
    } else if (!out.opt.finite) {
      throw Error("non-finite gradient at step " + std::to_string(step) +
                  " (parameters left as they were); " + last_good());
    }
    state_.step = step;
    state_.tokens_seen += out.io_tokens;
    run_tokens_ += out.io_tokens;
    interval_.loss += out.totals.loss;
    interval_.nll += out.totals.nll;
    interval_.tokens += uint64_t(out.totals.tokens);
    interval_.steps++;
    summary.step_seconds += seconds_since(step_start);
    if (o_.balance && world() > 1 && step == first_step_ + o_.balance_after) rebalance();

    const double elapsed = seconds_since(started_);
    const bool stopping = should_stop(elapsed) || out.totals.stop_requested;
    if (step % o_.log_every == 0 || stopping) log_interval(step, out.opt, elapsed, summary);
    if (o_.valid && o_.valid_every && step % o_.valid_every == 0 && !stopping)
      run_validation(false, summary);
    const bool due_steps = o_.save_every && step % o_.save_every == 0;
    if ((due_steps || out.totals.save_due) && !stopping) {
      summary.last_checkpoint = save();
      last_save_ = Clock::now();
    }
    if (out.totals.stop_requested) return true;
  }
  return false;
}

// The progress line and train.jsonl record of the interval that ends with `step`.
void Run::log_interval(uint64_t step, const Optimizer::Result& opt, double elapsed,
                       TrainSummary& summary) {
  StepMetrics m;
  m.step = step;
  m.epoch = stream_->position().epoch;
  m.loss_per_token = interval_.loss / double(std::max<uint64_t>(interval_.tokens, 1));
  m.nll_per_token = interval_.nll / double(std::max<uint64_t>(interval_.tokens, 1));
  m.lr = lr_at(step);
  m.tokens_per_second = double(run_tokens_) / std::max(elapsed, 1e-9);
  m.elapsed_seconds = elapsed_before_ + elapsed;
  m.eta_seconds = estimate_eta(elapsed, fraction_done(elapsed));
  if (precision_ == Precision::fp16) {
    m.loss_scale = state_.loss_scale.scale;
    m.skipped_steps = state_.loss_scale.skipped;
  }
  say(progress_line(m) + "  " + precision_name(precision_));
  nlohmann::json j = to_json(m);
  j["event"] = "train";
  j["precision"] = precision_name(precision_);
  j["skipped_in_interval"] = interval_.skipped;
  j["grad_norm"] = opt.grad_norm;
  j["steps_in_interval"] = interval_.steps;
  j["interval_seconds"] = seconds_since(interval_.start);
  if (!exchanges_.empty()) j["exchange_seconds"] = interval_.exchange_seconds;
  log(j);
  summary.train_loss_per_token = m.loss_per_token;
  interval_ = Interval{};
}

void Run::run_validation(bool first, TrainSummary& summary) {
  ValidationResult v = validate();
  (first ? summary.first_valid : summary.last_valid) = v;
  char line[160];
  std::snprintf(line, sizeof line, "valid step %llu: loss %.4f  ppl %.2f  (%llu tokens)",
                static_cast<unsigned long long>(state_.step), v.loss_per_token, v.perplexity(),
                static_cast<unsigned long long>(v.tokens));
  say(line);
  log({{"event", "valid"},
       {"step", state_.step},
       {"loss", v.loss_per_token},
       {"nll", v.nll_per_token},
       {"ppl", v.perplexity()},
       {"tokens", v.tokens}});
}

// After the last step: the final validation and checkpoint, the summary and the end record.
void Run::finish(bool interrupted, TrainSummary& summary) {
  if (o_.valid && !interrupted) run_validation(false, summary);
  if (interrupted && state_.step == 0 && resumed_from_.empty()) {
    say("interrupted before the first step: nothing was trained, so no checkpoint was written");
  } else if (interrupted && saved_step_ == state_.step) {
    summary.last_checkpoint = (fs::path(o_.out_dir) / checkpoint_name(state_.step)).string();
    say("interrupted: " + summary.last_checkpoint + " already holds step " +
        std::to_string(state_.step));
  } else {
    if (interrupted)
      say("interrupted: writing a checkpoint at step " + std::to_string(state_.step));
    if (saved_step_ != state_.step || summary.last_checkpoint.empty())
      summary.last_checkpoint = save();
    say("checkpoint " + summary.last_checkpoint);
  }
  summary.steps = state_.step;
  summary.precision = precision_;
  summary.loss_scale = state_.loss_scale;
  for (const Replica& r : replicas_) summary.replica_rows.push_back(r.rows_done);
  summary.epoch = stream_->position().epoch;
  summary.interrupted = interrupted;
  summary.tokens_per_second = double(run_tokens_) / std::max(seconds_since(started_), 1e-9);
  summary.peak_pool_bytes = replicas_[0].pool->bytes();
  if (!exchanges_.empty() && summary.step_seconds > 0) {
    char line[160];
    std::snprintf(
        line, sizeof line, "gradient exchange: %.1f%% of the step time (%.3f s a step)",
        100.0 * summary.exchange_seconds / summary.step_seconds,
        summary.exchange_seconds / double(std::max<uint64_t>(state_.step - first_step_, 1)));
    say(line);
  }
  log({{"event", "end"},
       {"step", state_.step},
       {"interrupted", interrupted},
       {"tokens_per_second", summary.tokens_per_second},
       {"exchange_seconds", summary.exchange_seconds},
       {"step_seconds", summary.step_seconds},
       {"activation_bytes", summary.peak_pool_bytes}});
}

}  // namespace training

void check_output_dir(const TrainerOptions& o) {
  const auto existing = list_checkpoints(o.out_dir);
  if (o.resume && existing.empty())
    throw Error("--resume: no checkpoint-<step>.safetensors in " + o.out_dir);
  if (!o.resume && !existing.empty())
    throw Error(o.out_dir + " already holds checkpoints (latest " +
                fs::path(existing.back().second).filename().string() +
                "): pass --resume to continue that run, or choose another --out");
}

TrainSummary train(Device& dev, const TrainerOptions& options, const TrainTestHooks& hooks) {
  return train(std::vector<Device*>{&dev}, options, hooks);
}

TrainSummary train(const std::vector<Device*>& devices, const TrainerOptions& options,
                   const TrainTestHooks& hooks) {
  training::Run run(devices, options, hooks);
  return run.go();
}

}  // namespace vkf::model
