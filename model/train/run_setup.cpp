// Everything a run does before its first step: the checks that can refuse it, resuming, reading
// and batching the corpora, the replicas and their gradient exchange, the announcement.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/file_io.h"
#include "model/checkpoint.h"
#include "model/data/corpus.h"
#include "model/data/sha256.h"
#include "model/op_problems.h"
#include "model/params.h"
#include "model/train/run.h"

namespace fs = std::filesystem;

namespace vkf::model::training {
namespace {

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

}  // namespace

// Everything before the first step. Every check that can refuse the run comes before the first
// write into out_dir: a refused run leaves the directory as it was.
void Run::prepare() {
  o_.validate();
  if (devices_.empty()) throw Error("training needs at least one device");
  if (o_.group && o_.group->size() > 1 && o_.stop_requested)
    say("note: Ctrl-C stops every process before the next micro-batch");
  // One run per directory.
  if (leader() && !o_.held_lock) lock_.emplace(o_.out_dir);
  fs::create_directories(o_.out_dir);
  if (leader())
    for (const std::string& path : remove_stale_temporaries(o_.out_dir))
      say("removed " + path + ", left by a process that ended while writing it");
  tok_ = Tokenizer::load(o_.vocab);
  config_ = config_for(o_, *tok_);

  // Every replica runs in the precision the first device takes (fp16 needs it on all of them).
  precision_ = resolve_precision(o_.precision, devices_[0]->info());
  if (precision_ == Precision::fp16)
    for (Device* d : devices_) resolve_precision(PrecisionChoice::fp16, d->info());
  // Before anything is recorded: the kernels each device runs follow its tuning.
  const ModelWork work = training_work(o_.batching.max_tokens, activation_dtype(precision_));
  for (Device* d : devices_) {
    const std::string what =
        apply_tuning(*d, o_.tuning, model_op_problems(config_, work, d->info()), o_.tuning_note);
    if (o_.tuning_note) o_.tuning_note("kernels " + what);
  }

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
}

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

void Run::setup_replicas(const std::vector<float>& initial, const TrainState& resumed) {
  const int rank = o_.group ? o_.group->rank() : 0;
  ops::AdamOptions adam = o_.adam;
  adam.d_model = float(config_.d_model);
  for (size_t i = 0; i < devices_.size(); ++i) {
    Replica& r = replicas_.emplace_back();
    r.dev = devices_[i];
    r.global_index = rank * int(devices_.size()) + int(i);
    r.params =
        std::make_unique<DeviceParams>(*r.dev, config_, hooks_.max_param_chunk_bytes, precision_);
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
  if (!hooks_.initial_shares.empty()) {
    if (hooks_.initial_shares.size() != weights_.size())
      throw Error(std::to_string(hooks_.initial_shares.size()) + " initial shares for " +
                  std::to_string(weights_.size()) + " replicas");
    for (double w : hooks_.initial_shares)
      if (!(w > 0)) throw Error("initial shares must be positive");
    weights_ = hooks_.initial_shares;
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
                  "on %s in %s; %zu batches an epoch (max %lld tokens a side, x%d accumulated)",
                  config_.d_model, config_.d_ff, config_.heads, config_.encoder_layers,
                  config_.decoder_layers, config_.vocab_size,
                  double(replicas_[0].params->layout().parameter_count()) / 1e6, where.c_str(),
                  precision_name(precision_), train_batcher_->batches_per_epoch(),
                  static_cast<long long>(bo.max_tokens), o_.accumulate);
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
       {"precision", precision_name(precision_)},
       {"seed", o_.seed}});
}

}  // namespace vkf::model::training
