#include "model/train/trainer.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "engine/error.h"
#include "engine/exchange/gradient_exchange.h"
#include "engine/step_scalars.h"
#include "model/checkpoint.h"
#include "model/data/corpus.h"
#include "model/data/sha256.h"
#include "model/data/tokenizer.h"
#include "model/device_params.h"
#include "model/file_io.h"
#include "model/optimizer.h"
#include "model/params.h"
#include "model/train/output_lock.h"
#include "model/train/progress.h"
#include "model/train/schedule.h"
#include "model/train/train_state.h"
#include "model/train_graph.h"

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

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Dropout seed of micro-batch `micro` of a step: Philox is keyed by (seed, step, tensor,
// element), so micro-batches of one step need seeds of their own.
uint32_t micro_batch_seed(uint64_t seed, int micro) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + uint64_t(micro) * 0xbf58476d1ce4e5b9ull + 1;
  z = (z ^ (z >> 31)) * 0x94d049bb133111ebull;
  return uint32_t(z ^ (z >> 29));
}

BatchTokens tokens_of(const Batch& b) {
  return {b.src, b.tgt_in, b.tgt_out, b.src_lengths, b.tgt_lengths};
}

// Rows of a batch per replica, proportional to the weights; largest remainders get the leftover
// rows (ties to the lower index), so every process computes the same split.
std::vector<int> split_rows(int rows, const std::vector<double>& weights) {
  const size_t n = weights.size();
  double total = 0;
  for (double w : weights) total += w;
  std::vector<int> out(n, 0);
  std::vector<std::pair<double, size_t>> rest;
  int given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = double(rows) * weights[i] / total;
    out[i] = int(exact);
    given += out[i];
    rest.emplace_back(-(exact - double(out[i])), i);
  }
  std::sort(rest.begin(), rest.end());
  for (size_t k = 0; given < rows; ++k, ++given) out[rest[k % n].second]++;
  return out;
}

// Rows [first, first + count) of a batch.
BatchTokens slice_rows(const Batch& b, int first, int count) {
  auto rows = [&](const std::vector<int32_t>& v, int len) {
    return std::vector<int32_t>(v.begin() + ptrdiff_t(first) * len,
                                v.begin() + ptrdiff_t(first + count) * len);
  };
  return {rows(b.src, b.src_len), rows(b.tgt_in, b.tgt_len), rows(b.tgt_out, b.tgt_len),
          rows(b.src_lengths, 1), rows(b.tgt_lengths, 1)};
}

// FNV-1a of the parameters' bytes: replicas must stay identical.
uint64_t bytes_hash(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Graphs by bucket shape, recorded on first use, sharing one activation pool.
class GraphCache {
 public:
  GraphCache(Device& dev, DeviceParams& params, const BufferRef& scalars, GraphOptions options)
      : dev_(dev), params_(params), scalars_(scalars), options_(std::move(options)) {}
  TrainGraph& get(int batch, int src_len, int tgt_len) {
    BucketShape shape{uint32_t(batch), uint32_t(src_len), uint32_t(tgt_len)};
    auto it = graphs_.find(shape);
    if (it == graphs_.end())
      it = graphs_
               .emplace(shape,
                        std::make_unique<TrainGraph>(dev_, params_, shape, scalars_, options_))
               .first;
    return *it->second;
  }
  size_t size() const { return graphs_.size(); }

 private:
  Device& dev_;
  DeviceParams& params_;
  BufferRef scalars_;
  GraphOptions options_;
  std::map<BucketShape, std::unique_ptr<TrainGraph>> graphs_;
};

// The model config of this run: the options' architecture with the vocabulary's size, ids and
// checksum.
ModelConfig config_for(const TrainerOptions& o, const Tokenizer& tok) {
  ModelConfig c = o.config;
  c.vocab_size = tok.vocab_size();
  c.pad_id = tok.ids().pad;
  c.unk_id = tok.ids().unk;
  c.bos_id = tok.ids().bos;
  c.eos_id = tok.ids().eos;
  c.tokenizer = fs::path(tok.path()).filename().string();
  c.tokenizer_sha256 = tok.sha256();
  c.validate();
  return c;
}

// The logits of a micro-batch ([target rows, vocab] fp32) are one buffer: keep them within what
// the device can bind (lavapipe: 128 MiB; most GPUs: 2-4 GiB).
int64_t max_tokens_for_device(const Device& dev, int vocab) {
  const DeviceInfo& info = dev.info();
  uint64_t limit = info.max_storage_buffer_range;
  if (info.max_buffer_bytes) limit = std::min(limit, info.max_buffer_bytes);
  return int64_t(limit / (uint64_t(vocab) * 4)) / 8 * 8;
}

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

class Run {
 public:
  Run(const std::vector<Device*>& devices, const TrainerOptions& o) : devices_(devices), o_(o) {}
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
  ExampleStore read(const CorpusFiles& files, const char* what);
  bool stop_agreed();
  struct StepOutcome {
    // Stopped by a request before the step's micro-batch `dropped`: the micro-batches before it
    // were undone (gradients zeroed, data stream rewound), so the step never happened.
    bool abandoned = false;
    int dropped = 0;
    std::vector<double> sums;  // loss, nll, tokens, stop requested, checkpoint due (see train_step)
    uint64_t io_tokens = 0;    // source + target tokens of this process
    Optimizer::Result opt;
    double exchange_seconds = 0;  // gradient exchange the step waited for
  };
  StepOutcome train_step(uint64_t step, bool save_due);
  std::vector<float> start_or_resume(TrainState& resumed);
  BatcherOptions make_batchers();
  void announce(const BatcherOptions& bo);
  void setup_replicas(const std::vector<float>& initial, const TrainState& resumed);
  // One micro-batch on every replica; returns (loss, nll, tokens) summed over this process.
  // With `exchange` (the step's last micro-batch, exchange overlapped) the gradients are summed
  // across replicas layer by layer as the backward finishes them; finish() on every exchange
  // then completes the step's exchange.
  std::array<double, 3> run_micro_batch(const Batch& b, uint64_t step, int micro, bool exchange);
  // Per segment of `g`, the (exchange, bucket) pairs its completion makes final.
  const std::vector<std::vector<std::pair<size_t, size_t>>>& downloads_after_segment(
      const TrainGraph& g);
  void rebalance();
  ValidationResult validate();
  std::string save();
  void check_replicas_identical();
  std::string last_good() const;
  double lr_at(uint64_t step) const;
  bool should_stop(double elapsed) const;
  double fraction_done(double elapsed) const;

  std::vector<Device*> devices_;
  TrainerOptions o_;
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
  TrainState state_;
  uint64_t saved_step_ = 0;
  Clock::time_point started_;
  double elapsed_before_ = 0;  // from earlier parts of a resumed run
};

ExampleStore Run::read(const CorpusFiles& files, const char* what) {
  CorpusReadOptions ro;
  ro.max_len = o_.max_sequence_len;
  ro.max_line_bytes = o_.max_line_bytes;
  CorpusStats stats;
  auto t0 = Clock::now();
  ExampleStore store = read_corpus(files, *tok_, ro, stats);
  store.shrink_to_fit();
  char line[256];
  std::snprintf(line, sizeof line, "%s: %lld pairs from %s (%.1f s)", what,
                static_cast<long long>(stats.pairs_kept), files.describe().c_str(),
                seconds_since(t0));
  say(line);
  for (const auto& s : stats.summary()) say(std::string("  ") + s);
  if (store.empty())
    throw Error(std::string("the ") + what + " corpus " + files.describe() +
                " has no usable pairs");
  return store;
}

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

void Run::setup_replicas(const std::vector<float>& initial, const TrainState& resumed) {
  const int rank = o_.group ? o_.group->rank() : 0;
  ops::AdamOptions adam = o_.adam;
  adam.d_model = float(config_.d_model);
  for (size_t i = 0; i < devices_.size(); ++i) {
    Replica& r = replicas_.emplace_back();
    r.dev = devices_[i];
    r.global_index = rank * int(devices_.size()) + int(i);
    r.params = std::make_unique<DeviceParams>(*r.dev, config_, o_.max_param_chunk_bytes);
    r.params->upload(initial);
    if (o_.resume) r.params->upload_moments(resumed.adam_m, resumed.adam_v);
    r.scalars = r.dev->allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
    r.sc = reinterpret_cast<StepScalars*>(r.scalars.mapped());
    *r.sc = StepScalars{};
    r.pool = std::make_shared<ActivationPool>(*r.dev);
    r.train_graphs = std::make_unique<GraphCache>(
        *r.dev, *r.params, r.scalars.ref(),
        GraphOptions{.backward = true, .dropout = true, .profile = false, .pool = r.pool});
    r.valid_graphs = std::make_unique<GraphCache>(
        *r.dev, *r.params, r.scalars.ref(),
        GraphOptions{.backward = false, .dropout = false, .profile = false, .pool = r.pool});
    r.optimizer = std::make_unique<Optimizer>(*r.dev, *r.params, r.scalars.ref(), adam);
  }
  weights_.assign(size_t(world()), 1.0);
  if (!o_.initial_shares.empty()) {
    if (o_.initial_shares.size() != weights_.size())
      throw Error(std::to_string(o_.initial_shares.size()) + " initial shares for " +
                  std::to_string(weights_.size()) + " replicas");
    for (double w : o_.initial_shares)
      if (!(w > 0)) throw Error("initial shares must be positive");
    weights_ = o_.initial_shares;
  }
  if (world() > 1) {
    // One exchange per parameter chunk (one chunk wherever the device binds the whole model).
    std::vector<Device*> devs;
    for (auto& r : replicas_) devs.push_back(r.dev);
    // Buckets end where layers do, so that each can go as soon as its layer's backward is done.
    const std::vector<uint64_t> layers = layer_boundaries(replicas_[0].params->layout());
    for (size_t c = 0; c < replicas_[0].params->chunks().size(); ++c) {
      const auto& chunk = replicas_[0].params->chunks()[c];
      std::vector<BufferRef> grads;
      for (auto& r : replicas_) grads.push_back(r.params->chunks()[c].grads.ref());
      std::vector<uint64_t> ends;
      for (uint64_t at : layers)
        if (at > chunk.first && at < chunk.first + chunk.floats) ends.push_back(at - chunk.first);
      exchanges_.push_back(std::make_unique<GradientExchange>(devs, grads, chunk.floats, o_.group,
                                                              uint64_t(1) << 22, ends));
    }
    size_t buckets = 0;
    for (const auto& e : exchanges_) buckets += e->buckets();
    say("gradient exchange: " + std::to_string(world()) + " replicas, " + std::to_string(buckets) +
        " buckets, " +
        (exchanges_[0]->path() == ExchangePath::shared ? "through host memory shared by the devices"
                                                       : "through host-visible staging") +
        (o_.group ? std::string(" and ") + o_.group->transport() : std::string()) +
        (o_.exchange == TrainerOptions::Exchange::overlapped ? ", overlapped with the backward"
                                                             : ", after the backward"));
  }
}

std::array<double, 3> Run::run_micro_batch(const Batch& b, uint64_t step, int micro,
                                           bool exchange) {
  const std::vector<int> rows = split_rows(b.batch_size, weights_);
  int first = 0;
  for (int g = 0; g < replicas_[0].global_index; ++g) first += rows[size_t(g)];
  struct Pending {
    Replica* r;
    TrainGraph* g;
    int rows;
    Clock::time_point submitted;
  };
  std::vector<Pending> pending;
  last_backward_done_ = Clock::now();  // stays so when no replica here has rows this step
  for (size_t i = 0; i < replicas_.size(); ++i) {
    Replica& r = replicas_[i];
    const int n = rows[size_t(r.global_index)];
    if (n > 0) {
      if (int(step) == int(o_.fail_step) && r.global_index == o_.fail_replica)
        throw DeviceLostError("VK_ERROR_DEVICE_LOST (injected for a test) on " + r.dev->label());
      TrainGraph& g = r.train_graphs->get(n, b.src_len, b.tgt_len);
      g.set_batch(slice_rows(b, first, n));
      r.sc->step = uint32_t(step);
      r.sc->seed = micro_batch_seed(o_.seed, micro);
      r.sc->dropout_row = uint32_t(first);  // the masks one device with the whole batch draws
      r.sc->grad_scale = 1.0f;
      if (exchange) {
        // Each bucket's copy to staging is queued right behind the segment that completes it.
        const auto& after = downloads_after_segment(g);
        for (size_t k = 0; k < g.segments(); ++k) {
          g.submit_segment(k);
          for (auto [e, bucket] : after[k]) exchanges_[e]->download(i, bucket);
        }
      } else {
        g.submit();
      }
      pending.push_back({&r, &g, n, Clock::now()});
    } else if (exchange) {  // no rows this step: its (zero) gradients go at once
      for (size_t e = 0; e < exchanges_.size(); ++e)
        for (size_t bucket = 0; bucket < exchanges_[e]->buckets(); ++bucket)
          exchanges_[e]->download(i, bucket);
    }
    first += n;
  }
  std::array<double, 3> sums{0, 0, 0};
  // Collects the replicas that have finished, which also times each for balancing.
  auto collect_finished = [&](bool all) {
    while (!pending.empty()) {
      for (size_t i = 0; i < pending.size();) {
        Pending& p = pending[i];
        if ((!all || pending.size() > 1) && !p.g->ready()) {
          ++i;
          continue;
        }
        StepResult res = p.g->collect();
        last_backward_done_ = Clock::now();
        p.r->busy_seconds += seconds_since(p.submitted);
        p.r->rows_done += p.rows;
        sums[0] += res.loss_sum;
        sums[1] += res.nll_sum;
        sums[2] += double(res.tokens);
        pending.erase(pending.begin() + ptrdiff_t(i));
      }
      if (!all) return;
      if (!pending.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  };
  if (exchange) {
    // Last layer first, as the backward finishes them (the same order on every process, which
    // MPI needs): sum each bucket while the devices run the layers below it.
    for (size_t e = exchanges_.size(); e-- > 0;)
      for (size_t bucket = exchanges_[e]->buckets(); bucket-- > 0;) {
        while (!exchanges_[e]->downloaded(bucket)) {
          collect_finished(false);
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        collect_finished(false);
        exchanges_[e]->reduce(bucket);
      }
  }
  collect_finished(true);
  return sums;
}

const std::vector<std::vector<std::pair<size_t, size_t>>>& Run::downloads_after_segment(
    const TrainGraph& g) {
  auto it = download_plans_.find(&g);
  if (it != download_plans_.end()) return it->second;
  // The segment after which every float of a bucket is final: the last one touching it.
  std::vector<std::vector<std::pair<size_t, size_t>>> plan(g.segments());
  const auto& chunks = replicas_[0].params->chunks();
  for (size_t e = 0; e < exchanges_.size(); ++e)
    for (size_t bucket = 0; bucket < exchanges_[e]->buckets(); ++bucket) {
      auto [lo, hi] = exchanges_[e]->bucket_range(bucket);
      lo += chunks[e].first;
      hi += chunks[e].first;
      size_t last = g.segments() - 1;
      for (size_t k = 0; k < g.segments(); ++k)
        for (auto [first, end] : g.final_ranges(k))
          if (first < hi && lo < end) last = k;
      plan[last].emplace_back(e, bucket);
    }
  return download_plans_.emplace(&g, std::move(plan)).first->second;
}

void Run::rebalance() {
  std::vector<double> rate(size_t(world()), 0.0);
  for (const Replica& r : replicas_)
    rate[size_t(r.global_index)] = r.rows_done / std::max(r.busy_seconds, 1e-9);
  sum_across_processes(rate);
  std::string line = "balanced shares (rows/s):";
  for (size_t g = 0; g < rate.size(); ++g) {
    weights_[g] = std::max(rate[g], 1e-6);
    char part[48];
    std::snprintf(part, sizeof part, " [%zu] %.0f", g, rate[g]);
    line += part;
  }
  say(line);
  log({{"event", "balance"}, {"step", state_.step}, {"rows_per_second", rate}});
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

// Resume, or refuse to mix a new run into a directory that holds one. Returns the parameters to
// resume from (empty for a new run) and fills `resumed` with the optimizer state.
std::vector<float> Run::start_or_resume(TrainState& resumed) {
  std::vector<float> initial;
  const auto existing = list_checkpoints(o_.out_dir);
  check_output_dir(o_);
  if (o_.resume) {
    const std::string path = existing.back().second;
    Checkpoint ck = load_checkpoint(path);
    require_compatible(config_, ck.config, path);
    ParamLayout layout(config_);
    const std::string state_path = train_state_path(path);
    resumed = load_train_state(state_path, layout.total_floats());
    if (resumed.step != ck.step)
      throw Error(path + " and its optimizer state disagree on the step (" +
                  std::to_string(ck.step) + " vs " + std::to_string(resumed.step) + ")");
    // Files written before the checksum existed are still resumable (refusing them would strand
    // every run in progress); their step must match, as before, and the note says what is not
    // checked.
    const std::string checksum = params_checksum(layout, ck.params);
    if (resumed.params_checksum.empty())
      say("note: " + state_path +
          " predates optimizer-state checksums, so nothing shows that it belongs to " + path +
          " beyond the step; resuming");
    else if (resumed.params_checksum != checksum)
      throw Error(state_path + " does not belong to " + path +
                  ": it was written for parameters with checksum " + resumed.params_checksum +
                  ", the checkpoint's are " + checksum +
                  " (a state copied from another run, or a checkpoint replaced after it was "
                  "written); resuming would mix two runs");
    if (resumed.seed != o_.seed)
      say("note: resuming with the run's seed " + std::to_string(resumed.seed) + " (not --seed " +
          std::to_string(o_.seed) + ")");
    o_.seed = resumed.seed;
    initial = std::move(ck.params);
    state_ = resumed;
    state_.adam_m.clear();
    state_.adam_v.clear();
    elapsed_before_ = state_.elapsed_seconds;
    saved_step_ = state_.step;
    resumed_from_ = path;
  } else {
    state_.seed = o_.seed;
  }
  return initial;
}

// The training and validation batchers; --max-tokens is lowered where a device could not bind
// the logits of such a batch.
BatcherOptions Run::make_batchers() {
  BatcherOptions bo = o_.batching;
  bo.seed = o_.seed;
  if (bo.buckets.empty()) bo.max_len = o_.max_sequence_len;
  for (Device* dev : devices_) {
    const int64_t cap = max_tokens_for_device(*dev, config_.vocab_size);
    if (bo.max_tokens > cap) {
      say("note: --max-tokens " + std::to_string(bo.max_tokens) + " lowered to " +
          std::to_string(cap) + ": the logits of a larger batch exceed what " + dev->info().name +
          " can bind in one buffer (use --accumulate for larger batches)");
      bo.max_tokens = cap;
    }
  }
  train_batcher_ = std::make_unique<Batcher>(train_store_, tok_->ids(), bo);
  if (o_.valid) {
    BatcherOptions vo = bo;
    vo.shuffle = false;
    valid_batcher_ = std::make_unique<Batcher>(valid_store_, tok_->ids(), vo);
  }
  return bo;
}

// The run's one-line summary on stderr and its first record in train.jsonl.
void Run::announce(const BatcherOptions& bo) {
  std::vector<std::string> device_names;
  for (Device* d : devices_) device_names.push_back(d->label());
  {
    std::string where = replicas_.size() == 1 ? devices_[0]->info().name
                                              : std::to_string(replicas_.size()) + " devices";
    if (o_.group && o_.group->size() > 1)
      where +=
          " x " + std::to_string(o_.group->size()) + " processes (" + o_.group->transport() + ")";
    char line[400];
    std::snprintf(line, sizeof line,
                  "model: d_model %d, d_ff %d, heads %d, layers %d+%d, vocab %d: %.2fM parameters "
                  "on %s; %zu batches an epoch (max %lld tokens a side, x%d accumulated)",
                  config_.d_model, config_.d_ff, config_.heads, config_.encoder_layers,
                  config_.decoder_layers, config_.vocab_size,
                  double(replicas_[0].params->layout().parameter_count()) / 1e6, where.c_str(),
                  train_batcher_->batches_per_epoch(), static_cast<long long>(bo.max_tokens),
                  o_.accumulate);
    say(line);
  }
  log({{"event", "start"},
       {"config", config_.to_json()},
       {"step", state_.step},
       {"devices", device_names},
       {"processes", o_.group ? o_.group->size() : 1},
       {"parameters", replicas_[0].params->layout().parameter_count()},
       {"max_tokens", bo.max_tokens},
       {"accumulate", o_.accumulate},
       {"seed", o_.seed}});
}

// One optimizer step on every replica: the micro-batches, the gradient exchange, the update.
Run::StepOutcome Run::train_step(uint64_t step, bool save_due) {
  StepOutcome out;
  // loss, nll, tokens (this process), stop request (any process), checkpoint due by the
  // leader's clock: summed across processes so that every process decides alike.
  std::vector<double>& sums = out.sums;
  sums.assign(5, 0.0);
  uint64_t tokens = 0;
  const BatchPosition step_start = stream_->position();
  try {
    const bool overlap = !exchanges_.empty() && o_.exchange == TrainerOptions::Exchange::overlapped;
    for (int micro = 0; micro < o_.accumulate; ++micro) {
      // A stop request is honoured before any micro-batch, so a large --accumulate cannot hold
      // Ctrl-C off for minutes. The gradient exchange only runs within the last micro-batch,
      // so nothing is in flight between replicas here.
      if (stop_agreed()) {
        if (micro > 0) {
          for (Replica& r : replicas_) r.params->zero_grads();
          stream_ = std::make_unique<BatchStream>(*train_batcher_, step_start);
        }
        out.abandoned = true;
        out.dropped = micro;
        return out;
      }
      Batch b = stream_->next();
      ++micro_batches_run_;
      auto s = run_micro_batch(b, step, micro, overlap && micro + 1 == o_.accumulate);
      for (int k = 0; k < 3; ++k) sums[size_t(k)] += s[size_t(k)];
      tokens += uint64_t(b.tgt_tokens);
      out.io_tokens += uint64_t(b.src_tokens + b.tgt_tokens);
    }
    sums[3] =
        (o_.stop_requested && o_.stop_requested->load()) ||
                (o_.stop_after_micro_batches && micro_batches_run_ >= o_.stop_after_micro_batches)
            ? 1.0
            : 0.0;
    sums[4] = save_due ? 1.0 : 0.0;
    sum_across_processes(sums);
    if (!std::isfinite(sums[0]) || !std::isfinite(sums[1]))
      throw Error("the loss became " + std::string(std::isnan(sums[0]) ? "NaN" : "infinite") +
                  " at step " + std::to_string(step) + "; " + last_good() +
                  " (a lower learning rate or longer warm-up may help)");
    // Exchange time the step waits for: all of it after the backward, or (overlapped) what is
    // left once the last replica's backward has finished.
    const auto exchange_start = overlap ? last_backward_done_ : Clock::now();
    for (auto& exchange : exchanges_) {
      if (overlap)
        exchange->finish();
      else
        exchange->all_reduce();
    }
    if (!exchanges_.empty()) out.exchange_seconds = seconds_since(exchange_start);
    // The mean over every token of the step, whatever each replica's share.
    for (Replica& r : replicas_) {
      r.sc->step = uint32_t(step);  // also on replicas that had no rows this step
      r.sc->grad_scale = 1.0f / float(std::max<uint64_t>(tokens, 1));
      r.optimizer->submit();
    }
    for (Replica& r : replicas_) out.opt = r.optimizer->collect();
  } catch (const DeviceLostError& e) {
    throw Error(std::string("a device was lost at step ") + std::to_string(step) + " (" + e.what() +
                "); " + last_good() + "; --resume continues from it, with any number of devices");
  }
  return out;
}

bool Run::stop_agreed() {
  // Every process must take the same decision, so the flag is summed like the step's numbers.
  const bool test_stop =
      o_.stop_after_micro_batches && micro_batches_run_ >= o_.stop_after_micro_batches;
  std::vector<double> flag{(o_.stop_requested && o_.stop_requested->load()) || test_stop ? 1.0
                                                                                         : 0.0};
  sum_across_processes(flag);
  return flag[0] > 0;
}

TrainSummary Run::go() {
  o_.validate();
  if (devices_.empty()) throw Error("training needs at least one device");
  if (o_.group && o_.group->size() > 1 && o_.stop_requested)
    say("note: Ctrl-C stops every process before the next micro-batch");
  // One run per directory, and every check that can refuse the run comes before the first write
  // into it: a refused run leaves the directory as it was.
  if (leader() && !o_.held_lock) lock_.emplace(o_.out_dir);
  fs::create_directories(o_.out_dir);
  if (leader())
    for (const std::string& path : remove_stale_temporaries(o_.out_dir))
      say("removed " + path + ", left by a process that ended while writing it");
  tok_ = Tokenizer::load(o_.vocab);
  config_ = config_for(o_, *tok_);

  TrainState resumed;
  std::vector<float> initial = start_or_resume(resumed);

  train_store_ = read(o_.train, "train");
  if (o_.resume && state_.train_pairs != int64_t(train_store_.size()))
    throw Error("--resume: the training corpus has " + std::to_string(train_store_.size()) +
                " usable pairs but the run was started with " + std::to_string(state_.train_pairs) +
                ": not the same data");
  state_.train_pairs = int64_t(train_store_.size());
  if (o_.valid) valid_store_ = read(*o_.valid, "valid");

  const BatcherOptions bo = make_batchers();
  if (initial.empty()) initial = init_parameters(ParamLayout(config_), config_, o_.seed);
  setup_replicas(initial, resumed);
  initial.clear();
  resumed = TrainState{};
  if (!resumed_from_.empty() && !replicas_[0].params->all_finite(/*moments=*/true))
    throw Error(resumed_from_ +
                " or its optimizer state holds NaN, Inf or absurdly large values: not a "
                "checkpoint to resume from (move it and its .optimizer file aside to resume from "
                "the one before)");
  if (!resumed_from_.empty())
    say("resuming from " + resumed_from_ + " at step " + std::to_string(state_.step));

  // The vocabulary travels with the checkpoints (translate finds it there). Only now, after
  // every refusal: a refused run must not replace the vocabulary its checkpoints were trained
  // with. An identical copy is left alone.
  const fs::path vocab_copy = fs::path(o_.out_dir) / config_.tokenizer;
  if (leader() && !(fs::exists(vocab_copy) &&
                    (fs::equivalent(vocab_copy, o_.vocab) ||
                     sha256_file_hex(vocab_copy.string()) == config_.tokenizer_sha256)))
    copy_file_atomically(o_.vocab, vocab_copy.string());

  stream_ = std::make_unique<BatchStream>(*train_batcher_, state_.position);
  if (leader()) log_ = std::make_unique<JsonlLog>((fs::path(o_.out_dir) / "train.jsonl").string());

  announce(bo);

  TrainSummary summary;
  auto run_validation = [&](bool first) {
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
  };
  started_ = Clock::now();
  if (o_.valid && !o_.resume) run_validation(true);

  double interval_loss = 0, interval_nll = 0, interval_exchange = 0;
  uint64_t interval_tokens = 0, interval_steps = 0, run_tokens = 0;
  auto interval_start = Clock::now();
  auto last_save = Clock::now();
  bool interrupted = false;
  const uint64_t first_step = state_.step;

  while (!should_stop(seconds_since(started_))) {
    const uint64_t step = state_.step + 1;
    const auto step_start = Clock::now();
    const bool save_due = leader() && o_.save_every_minutes > 0 &&
                          seconds_since(last_save) >= o_.save_every_minutes * 60.0;
    const StepOutcome out = train_step(step, save_due);
    if (out.abandoned) {
      interrupted = true;
      if (out.dropped > 0)
        say("interrupted during step " + std::to_string(step) + " after " +
            std::to_string(out.dropped) + " of " + std::to_string(o_.accumulate) +
            " micro-batches: those are dropped, the run stops at step " +
            std::to_string(state_.step));
      break;
    }
    const std::vector<double>& sums = out.sums;
    const Optimizer::Result& opt = out.opt;
    const uint64_t io_tokens = out.io_tokens;
    summary.exchange_seconds += out.exchange_seconds;
    interval_exchange += out.exchange_seconds;
    if (!opt.finite)
      throw Error("non-finite gradient at step " + std::to_string(step) +
                  " (parameters left as they were); " + last_good());
    state_.step = step;
    state_.tokens_seen += io_tokens;
    run_tokens += io_tokens;
    interval_loss += sums[0];
    interval_nll += sums[1];
    interval_tokens += uint64_t(sums[2]);
    interval_steps++;
    summary.step_seconds += seconds_since(step_start);
    if (o_.balance && world() > 1 && step == first_step + o_.balance_after) rebalance();

    const double elapsed = seconds_since(started_);
    const bool stop_requested = sums[3] > 0;
    const bool stopping = should_stop(elapsed) || stop_requested;
    if (step % o_.log_every == 0 || stopping) {
      StepMetrics m;
      m.step = step;
      m.epoch = stream_->position().epoch;
      m.loss_per_token = interval_loss / double(std::max<uint64_t>(interval_tokens, 1));
      m.nll_per_token = interval_nll / double(std::max<uint64_t>(interval_tokens, 1));
      m.lr = lr_at(step);
      m.tokens_per_second = double(run_tokens) / std::max(elapsed, 1e-9);
      m.elapsed_seconds = elapsed_before_ + elapsed;
      m.eta_seconds = estimate_eta(elapsed, fraction_done(elapsed));
      say(progress_line(m));
      nlohmann::json j = to_json(m);
      j["event"] = "train";
      j["grad_norm"] = opt.grad_norm;
      j["steps_in_interval"] = interval_steps;
      j["interval_seconds"] = seconds_since(interval_start);
      if (!exchanges_.empty()) j["exchange_seconds"] = interval_exchange;
      log(j);
      summary.train_loss_per_token = m.loss_per_token;
      interval_loss = interval_nll = interval_exchange = 0;
      interval_tokens = interval_steps = 0;
      interval_start = Clock::now();
    }
    if (o_.valid && o_.valid_every && step % o_.valid_every == 0 && !stopping)
      run_validation(false);
    const bool due_steps = o_.save_every && step % o_.save_every == 0;
    const bool due_time = sums[4] > 0;
    if ((due_steps || due_time) && !stopping) {
      summary.last_checkpoint = save();
      last_save = Clock::now();
    }
    if (stop_requested) {
      interrupted = true;
      break;
    }
  }

  if (o_.valid && !interrupted) run_validation(false);
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
  for (const Replica& r : replicas_) summary.replica_rows.push_back(r.rows_done);
  summary.epoch = stream_->position().epoch;
  summary.interrupted = interrupted;
  summary.tokens_per_second = double(run_tokens) / std::max(seconds_since(started_), 1e-9);
  summary.peak_pool_bytes = replicas_[0].pool->bytes();
  if (!exchanges_.empty() && summary.step_seconds > 0) {
    char line[160];
    std::snprintf(
        line, sizeof line, "gradient exchange: %.1f%% of the step time (%.3f s a step)",
        100.0 * summary.exchange_seconds / summary.step_seconds,
        summary.exchange_seconds / double(std::max<uint64_t>(state_.step - first_step, 1)));
    say(line);
  }
  log({{"event", "end"},
       {"step", state_.step},
       {"interrupted", interrupted},
       {"tokens_per_second", summary.tokens_per_second},
       {"exchange_seconds", summary.exchange_seconds},
       {"step_seconds", summary.step_seconds},
       {"activation_bytes", summary.peak_pool_bytes}});
  return summary;
}

}  // namespace

void check_output_dir(const TrainerOptions& o) {
  const auto existing = list_checkpoints(o.out_dir);
  if (o.resume && existing.empty())
    throw Error("--resume: no checkpoint-<step>.safetensors in " + o.out_dir);
  if (!o.resume && !existing.empty())
    throw Error(o.out_dir + " already holds checkpoints (latest " +
                fs::path(existing.back().second).filename().string() +
                "): pass --resume to continue that run, or choose another --out");
}

TrainSummary train(Device& dev, const TrainerOptions& options) {
  return train(std::vector<Device*>{&dev}, options);
}

TrainSummary train(const std::vector<Device*>& devices, const TrainerOptions& options) {
  Run run(devices, options);
  return run.go();
}

}  // namespace vkf::model
