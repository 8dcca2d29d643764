#include "model/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "engine/error.h"
#include "engine/step_scalars.h"
#include "model/checkpoint.h"
#include "model/data/corpus.h"
#include "model/data/tokenizer.h"
#include "model/device_params.h"
#include "model/optimizer.h"
#include "model/params.h"
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

// The checkpoints in a directory, oldest first.
std::vector<std::pair<uint64_t, fs::path>> list_checkpoints(const std::string& dir) {
  static const std::regex pattern(R"(checkpoint-(\d+)\.safetensors)");
  std::vector<std::pair<uint64_t, fs::path>> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) out.emplace_back(std::stoull(m[1]), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

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

class Run {
 public:
  Run(Device& dev, const TrainerOptions& o) : dev_(dev), o_(o) {}
  TrainSummary go();

 private:
  void say(const std::string& line) {
    if (o_.progress) std::fprintf(o_.progress, "%s\n", line.c_str());
    if (o_.progress) std::fflush(o_.progress);
  }
  ExampleStore read(const CorpusFiles& files, const char* what);
  ValidationResult validate();
  std::string save();
  double lr_at(uint64_t step) const;
  bool should_stop(double elapsed) const;
  double fraction_done(double elapsed) const;

  Device& dev_;
  TrainerOptions o_;
  std::optional<Tokenizer> tok_;
  ModelConfig config_;
  ExampleStore train_store_, valid_store_;
  std::unique_ptr<Batcher> train_batcher_, valid_batcher_;
  std::unique_ptr<DeviceParams> params_;
  Buffer scalars_;
  std::shared_ptr<ActivationPool> pool_;
  std::unique_ptr<GraphCache> train_graphs_, valid_graphs_;
  std::unique_ptr<BatchStream> stream_;
  std::unique_ptr<JsonlLog> log_;
  TrainState state_;
  Clock::time_point started_;
  double elapsed_before_ = 0;  // from earlier parts of a resumed run
};

ExampleStore Run::read(const CorpusFiles& files, const char* what) {
  CorpusReadOptions ro;
  ro.max_len = o_.max_sequence_len;
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

ValidationResult Run::validate() {
  ValidationResult v;
  double loss = 0, nll = 0;
  EpochPlan plan = valid_batcher_->plan(0);
  for (size_t i = 0; i < plan.size(); ++i) {
    Batch b = valid_batcher_->make_batch(plan, i);
    TrainGraph& g = valid_graphs_->get(b.batch_size, b.src_len, b.tgt_len);
    g.set_batch(tokens_of(b));
    StepResult r = g.run();
    loss += r.loss_sum;
    nll += r.nll_sum;
    v.tokens += r.tokens;
  }
  v.loss_per_token = loss / double(std::max<uint64_t>(v.tokens, 1));
  v.nll_per_token = nll / double(std::max<uint64_t>(v.tokens, 1));
  return v;
}

std::string Run::save() {
  state_.position = stream_->position();
  state_.elapsed_seconds = elapsed_before_ + seconds_since(started_);
  state_.adam_m = params_->download_m();
  state_.adam_v = params_->download_v();
  const fs::path dir(o_.out_dir);
  // The state first: a checkpoint that exists always has its state beside it.
  save_train_state((dir / train_state_name(state_.step)).string(), state_);
  state_.adam_m.clear();
  state_.adam_v.clear();
  const std::string path = (dir / checkpoint_name(state_.step)).string();
  save_checkpoint(path, config_, params_->layout(), params_->download(), state_.step);
  auto all = list_checkpoints(o_.out_dir);
  for (size_t i = 0; i + size_t(o_.keep_checkpoints) < all.size(); ++i) {
    std::error_code ec;
    fs::remove(all[i].second, ec);
    fs::remove(train_state_path(all[i].second.string()), ec);
  }
  log_->write({{"event", "checkpoint"}, {"step", state_.step}, {"path", path}});
  return path;
}

TrainSummary Run::go() {
  o_.validate();
  fs::create_directories(o_.out_dir);
  tok_ = Tokenizer::load(o_.vocab);
  config_ = config_for(o_, *tok_);

  // The vocabulary travels with the checkpoints (translate finds it there).
  const fs::path vocab_copy = fs::path(o_.out_dir) / config_.tokenizer;
  if (!fs::exists(vocab_copy) || !fs::equivalent(vocab_copy, o_.vocab)) {
    const fs::path tmp = vocab_copy.string() + ".tmp";
    fs::copy_file(o_.vocab, tmp, fs::copy_options::overwrite_existing);
    fs::rename(tmp, vocab_copy);
  }

  // Resume, or refuse to mix a new run into a directory that holds one.
  std::vector<float> initial;
  const auto existing = list_checkpoints(o_.out_dir);
  if (o_.resume) {
    if (existing.empty())
      throw Error("--resume: no checkpoint-<step>.safetensors in " + o_.out_dir);
    const std::string path = existing.back().second.string();
    Checkpoint ck = load_checkpoint(path);
    require_compatible(config_, ck.config, path);
    ParamLayout layout(config_);
    state_ = load_train_state(train_state_path(path), layout.total_floats());
    if (state_.step != ck.step)
      throw Error(path + " and its optimizer state disagree on the step (" +
                  std::to_string(ck.step) + " vs " + std::to_string(state_.step) + ")");
    if (state_.seed != o_.seed)
      say("note: resuming with the run's seed " + std::to_string(state_.seed) + " (not --seed " +
          std::to_string(o_.seed) + ")");
    o_.seed = state_.seed;
    initial = std::move(ck.params);
    elapsed_before_ = state_.elapsed_seconds;
    say("resuming from " + path + " at step " + std::to_string(state_.step));
  } else {
    if (!existing.empty())
      throw Error(o_.out_dir + " already holds checkpoints (latest " +
                  existing.back().second.filename().string() +
                  "): pass --resume to continue that run, or choose another --out");
    state_.seed = o_.seed;
  }

  train_store_ = read(o_.train, "train");
  if (o_.resume && state_.train_pairs != int64_t(train_store_.size()))
    throw Error("--resume: the training corpus has " + std::to_string(train_store_.size()) +
                " usable pairs but the run was started with " + std::to_string(state_.train_pairs) +
                ": not the same data");
  state_.train_pairs = int64_t(train_store_.size());
  if (o_.valid) valid_store_ = read(*o_.valid, "valid");

  BatcherOptions bo = o_.batching;
  bo.seed = o_.seed;
  if (bo.buckets.empty()) bo.max_len = o_.max_sequence_len;
  const int64_t device_cap = max_tokens_for_device(dev_, config_.vocab_size);
  if (bo.max_tokens > device_cap) {
    say("note: --max-tokens " + std::to_string(bo.max_tokens) + " lowered to " +
        std::to_string(device_cap) + ": the logits of a larger batch exceed what " +
        dev_.info().name + " can bind in one buffer (use --accumulate for larger batches)");
    bo.max_tokens = device_cap;
  }
  train_batcher_ = std::make_unique<Batcher>(train_store_, tok_->ids(), bo);
  if (o_.valid) {
    BatcherOptions vo = bo;
    vo.shuffle = false;
    valid_batcher_ = std::make_unique<Batcher>(valid_store_, tok_->ids(), vo);
  }

  params_ = std::make_unique<DeviceParams>(dev_, config_);
  params_->upload(initial.empty() ? init_parameters(params_->layout(), config_, o_.seed) : initial);
  if (o_.resume) params_->upload_moments(state_.adam_m, state_.adam_v);
  state_.adam_m.clear();
  state_.adam_v.clear();

  scalars_ = dev_.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  auto* sc = reinterpret_cast<StepScalars*>(scalars_.mapped());
  *sc = StepScalars{};
  pool_ = std::make_shared<ActivationPool>(dev_);
  train_graphs_ = std::make_unique<GraphCache>(
      dev_, *params_, scalars_.ref(),
      GraphOptions{.backward = true, .dropout = true, .profile = false, .pool = pool_});
  valid_graphs_ = std::make_unique<GraphCache>(
      dev_, *params_, scalars_.ref(),
      GraphOptions{.backward = false, .dropout = false, .profile = false, .pool = pool_});
  ops::AdamOptions adam = o_.adam;
  adam.d_model = float(config_.d_model);
  Optimizer optimizer(dev_, *params_, scalars_.ref(), adam);
  stream_ = std::make_unique<BatchStream>(*train_batcher_, state_.position);
  log_ = std::make_unique<JsonlLog>((fs::path(o_.out_dir) / "train.jsonl").string());

  {
    char line[320];
    std::snprintf(line, sizeof line,
                  "model: d_model %d, d_ff %d, heads %d, layers %d+%d, vocab %d: %.2fM parameters "
                  "on %s; %zu batches an epoch (max %lld tokens a side, x%d accumulated)",
                  config_.d_model, config_.d_ff, config_.heads, config_.encoder_layers,
                  config_.decoder_layers, config_.vocab_size,
                  double(params_->layout().parameter_count()) / 1e6, dev_.info().name.c_str(),
                  train_batcher_->batches_per_epoch(), static_cast<long long>(bo.max_tokens),
                  o_.accumulate);
    say(line);
  }
  log_->write({{"event", "start"},
               {"config", config_.to_json()},
               {"step", state_.step},
               {"device", dev_.info().name},
               {"parameters", params_->layout().parameter_count()},
               {"max_tokens", bo.max_tokens},
               {"accumulate", o_.accumulate},
               {"seed", o_.seed}});

  TrainSummary summary;
  started_ = Clock::now();
  if (o_.valid && !o_.resume) {
    summary.first_valid = validate();
    char line[160];
    std::snprintf(line, sizeof line, "valid step %llu: loss %.4f  ppl %.2f  (%llu tokens)",
                  static_cast<unsigned long long>(state_.step), summary.first_valid->loss_per_token,
                  summary.first_valid->perplexity(),
                  static_cast<unsigned long long>(summary.first_valid->tokens));
    say(line);
  }

  auto run_validation = [&]() {
    ValidationResult v = validate();
    summary.last_valid = v;
    char line[160];
    std::snprintf(line, sizeof line, "valid step %llu: loss %.4f  ppl %.2f  (%llu tokens)",
                  static_cast<unsigned long long>(state_.step), v.loss_per_token, v.perplexity(),
                  static_cast<unsigned long long>(v.tokens));
    say(line);
    log_->write({{"event", "valid"},
                 {"step", state_.step},
                 {"loss", v.loss_per_token},
                 {"nll", v.nll_per_token},
                 {"ppl", v.perplexity()},
                 {"tokens", v.tokens}});
  };

  double interval_loss = 0, interval_nll = 0;
  uint64_t interval_tokens = 0, interval_steps = 0, run_tokens = 0;
  auto interval_start = Clock::now();
  auto last_save = Clock::now();
  uint64_t saved_step = state_.step;
  bool interrupted = false;

  while (!should_stop(seconds_since(started_))) {
    const uint64_t step = state_.step + 1;
    double loss = 0, nll = 0;
    uint64_t tokens = 0, io_tokens = 0;
    for (int micro = 0; micro < o_.accumulate; ++micro) {
      Batch b = stream_->next();
      TrainGraph& g = train_graphs_->get(b.batch_size, b.src_len, b.tgt_len);
      g.set_batch(tokens_of(b));
      sc->step = uint32_t(step);
      sc->seed = micro_batch_seed(o_.seed, micro);
      sc->grad_scale = 1.0f;
      sc->valid_tokens = uint32_t(b.tgt_tokens);
      StepResult r = g.run();
      loss += r.loss_sum;
      nll += r.nll_sum;
      tokens += r.tokens;
      io_tokens += uint64_t(b.src_tokens + b.tgt_tokens);
    }
    if (!std::isfinite(loss) || !std::isfinite(nll))
      throw Error("the loss became " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
                  " at step " + std::to_string(step) + "; " +
                  (saved_step > 0
                       ? "the last good checkpoint is " +
                             (fs::path(o_.out_dir) / checkpoint_name(saved_step)).string()
                       : std::string("no checkpoint was written yet")) +
                  " (a lower learning rate or longer warm-up may help)");
    sc->grad_scale = 1.0f / float(std::max<uint64_t>(tokens, 1));
    Optimizer::Result opt = optimizer.step();
    if (!opt.finite)
      throw Error("non-finite gradient at step " + std::to_string(step) +
                  " (parameters left as they were); " +
                  (saved_step > 0
                       ? "the last good checkpoint is " +
                             (fs::path(o_.out_dir) / checkpoint_name(saved_step)).string()
                       : std::string("no checkpoint was written yet")));
    state_.step = step;
    state_.tokens_seen += io_tokens;
    run_tokens += io_tokens;
    interval_loss += loss;
    interval_nll += nll;
    interval_tokens += tokens;
    interval_steps++;

    const double elapsed = seconds_since(started_);
    const bool stopping = should_stop(elapsed) || (o_.stop_requested && o_.stop_requested->load());
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
      log_->write(j);
      summary.train_loss_per_token = m.loss_per_token;
      interval_loss = interval_nll = 0;
      interval_tokens = interval_steps = 0;
      interval_start = Clock::now();
    }
    if (o_.valid && o_.valid_every && step % o_.valid_every == 0 && !stopping) run_validation();
    const bool due_steps = o_.save_every && step % o_.save_every == 0;
    const bool due_time =
        o_.save_every_minutes > 0 && seconds_since(last_save) >= o_.save_every_minutes * 60.0;
    if ((due_steps || due_time) && !stopping) {
      summary.last_checkpoint = save();
      saved_step = step;
      last_save = Clock::now();
    }
    if (o_.stop_requested && o_.stop_requested->load()) {
      interrupted = true;
      say("interrupted: writing a checkpoint at step " + std::to_string(step));
      break;
    }
  }

  if (o_.valid && !interrupted) run_validation();
  if (saved_step != state_.step || summary.last_checkpoint.empty())
    summary.last_checkpoint = save();
  say("checkpoint " + summary.last_checkpoint);
  summary.steps = state_.step;
  summary.epoch = stream_->position().epoch;
  summary.interrupted = interrupted;
  summary.tokens_per_second = double(run_tokens) / std::max(seconds_since(started_), 1e-9);
  summary.peak_pool_bytes = pool_->bytes();
  log_->write({{"event", "end"},
               {"step", state_.step},
               {"interrupted", interrupted},
               {"tokens_per_second", summary.tokens_per_second},
               {"activation_bytes", summary.peak_pool_bytes}});
  return summary;
}

}  // namespace

TrainSummary train(Device& dev, const TrainerOptions& options) {
  Run run(dev, options);
  return run.go();
}

}  // namespace vkf::model
