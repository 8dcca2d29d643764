// vkf train: trains a Transformer on a parallel corpus (model/train/trainer.h does the work).
// Model knobs come from --preset, then --config FILE, then the individual flags.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "apps/vkf/tuning_choice.h"
#include "engine/error.h"
#include "engine/exchange/process_group.h"
#include "engine/file_io.h"
#include "engine/json_limits.h"
#include "engine/stop_request.h"
#include "model/data/parallel_text.h"
#include "model/data/tokenizer.h"
#include "model/precision.h"
#include "model/train/output_lock.h"
#include "model/train/trainer.h"

namespace vkf::app {
namespace {

struct TrainArgs {
  std::string preset = "base";
  std::string config_file;
  std::vector<std::string> train_sets, valid_sets;
  int vocab_size = model::k_default_vocab_size;
  std::string max_time;
  std::string device;
  std::vector<std::string> devices;
  std::string exchange = "overlapped";
  std::string schedule = "noam";
  std::string precision = "auto";  // --precision fp32|fp16|auto (model/precision.h)
  bool quiet = false;
  std::string tune;  // --tune auto|off|FILE (apps/vkf/tuning_choice.h)
  // Individual model knobs (override preset and config file when given).
  std::optional<int> d_model, d_ff, heads, d_k, d_v, layers, encoder_layers, decoder_layers,
      max_positions;
  std::optional<float> dropout, attention_dropout, label_smoothing;
  bool learned_positions = false;
  model::TrainerOptions trainer;
};

model::ModelConfig build_config(const TrainArgs& a) {
  nlohmann::json j = model::ModelConfig::preset(a.preset).to_json();
  // Per-head sizes follow d_model / heads unless a file or flag sets them.
  j.erase("d_k");
  j.erase("d_v");
  if (!a.config_file.empty()) {
    const nlohmann::json file =
        parse_json(read_whole_file(a.config_file, k_max_text_file_bytes, "--config"),
                   "--config " + a.config_file);
    if (!file.is_object()) throw Error(a.config_file + ": expected a JSON object of model keys");
    for (auto& [key, value] : file.items()) {
      if (!j.contains(key) && key != "d_k" && key != "d_v")
        throw Error(a.config_file + ": unknown key '" + key +
                    "' (keys: d_model, d_ff, heads, d_k, d_v, encoder_layers, decoder_layers, "
                    "max_len, dropout, attention_dropout, label_smoothing, layer_norm_eps, "
                    "learned_positions)");
      j[key] = value;
    }
  }
  model::ModelConfig c = model::ModelConfig::from_json(j);
  if (a.d_model) c.d_model = *a.d_model;
  if (a.d_ff) c.d_ff = *a.d_ff;
  if (a.heads) c.heads = *a.heads;
  if (a.d_k) c.d_k = *a.d_k;
  if (a.d_v) c.d_v = *a.d_v;
  if (a.layers) c.encoder_layers = c.decoder_layers = *a.layers;
  if (a.encoder_layers) c.encoder_layers = *a.encoder_layers;
  if (a.decoder_layers) c.decoder_layers = *a.decoder_layers;
  if (a.max_positions) c.max_len = *a.max_positions;
  if (a.dropout) c.dropout = *a.dropout;
  if (a.attention_dropout) c.attention_dropout = *a.attention_dropout;
  if (a.label_smoothing) c.label_smoothing = *a.label_smoothing;
  if (a.learned_positions) c.learned_positions = true;
  return c;
}

model::CorpusFiles corpus_of(const std::vector<std::string>& files, const char* flag) {
  if (files.size() == 1) return model::CorpusFiles::tsv(files[0]);
  if (files.size() == 2) return model::CorpusFiles::two_files(files[0], files[1]);
  throw Error(std::string(flag) + " takes SRC TGT (two files) or one TSV file");
}

int run_train(TrainArgs& a) {
  model::TrainerOptions& o = a.trainer;
  // From the start: every phase (reading the corpus, training a vocabulary, tuning, compiling)
  // honours the first request (engine/stop_request.h).
  o.stop_requested = &install_stop_handler();
  o.config = build_config(a);
  o.train = corpus_of(a.train_sets, "--train-sets");
  if (!a.valid_sets.empty()) o.valid = corpus_of(a.valid_sets, "--valid-sets");
  if (!a.max_time.empty()) o.max_seconds = parse_duration(a.max_time, "--max-time");
  if (a.schedule == "noam")
    o.adam.schedule = ops::LrSchedule::noam;
  else if (a.schedule == "constant")
    o.adam.schedule = ops::LrSchedule::constant;
  else
    throw Error("--lr-schedule must be noam or constant");
  o.precision = model::parse_precision(a.precision);
  if (o.max_sequence_len > o.config.max_len) o.config.max_len = o.max_sequence_len;
  if (a.quiet) o.progress = nullptr;
  o.balance = o.balance_after > 0;
  o.validate();
  // The corpus is read only when training starts: a path that does not open is reported now,
  // before a vocabulary is trained or the kernels are tuned (seconds to minutes).
  model::ParallelTextReader{o.train};
  if (o.valid) model::ParallelTextReader{*o.valid};

  // Under mpirun every process runs this; rank 0 writes --out.
  std::unique_ptr<ProcessGroup> group = mpi_process_group();
  // The lock and the checks on --out come before anything is written there (a vocabulary
  // trained into it included); the trainer keeps the lock for the run.
  std::optional<model::OutputLock> lock;
  if (!group || group->rank() == 0) lock.emplace(o.out_dir);
  o.held_lock = lock ? &*lock : nullptr;
  model::check_output_dir(o);

  if (!std::filesystem::exists(o.vocab)) {
    if (o.resume)
      throw Error("--resume: --vocab " + o.vocab +
                  " does not exist; a resumed run needs the vocabulary it was trained with (a "
                  "copy is in " +
                  o.out_dir + ")");
    if (o.train.is_tsv())
      throw Error("--vocab " + o.vocab +
                  " does not exist; train one first with `vkf vocab` (a TSV corpus cannot be "
                  "used directly)");
    if (auto dir = std::filesystem::path(o.vocab).parent_path(); !dir.empty())
      std::filesystem::create_directories(dir);
    model::TokenizerTrainOptions t;
    t.inputs = {o.train.source, o.train.target};
    t.output_path = o.vocab;
    t.vocab_size = a.vocab_size;
    t.seed = uint32_t(o.seed);
    std::fprintf(stderr, "training a %d-piece vocabulary into %s\n", a.vocab_size, o.vocab.c_str());
    model::Tokenizer::train(t);
  }

  o.exchange = a.exchange == "after" ? model::TrainerOptions::Exchange::after_backward
                                     : model::TrainerOptions::Exchange::overlapped;
  // Data parallel: --devices lists one replica per entry (repeats make several logical devices
  // on one physical device); under mpirun each process takes the entry of its rank.
  std::vector<std::string> selectors =
      a.devices.empty() ? std::vector<std::string>{a.device} : a.devices;
  if (group) {
    if (selectors.size() > 1 && int(selectors.size()) != group->size())
      throw Error("under mpirun, --devices lists one device per process (" +
                  std::to_string(group->size()) + "), or one for all");
    selectors = {selectors[selectors.size() == 1 ? 0 : size_t(group->rank())]};
    o.group = group.get();
    if (group->rank() != 0) o.progress = nullptr;
  }
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<Device*> replicas;
  for (const auto& sel : selectors) {
    devices.push_back(open_device(sel));
    replicas.push_back(devices.back().get());
  }
  // The trainer tunes each device once it knows the precision it trains in; every process says
  // what its devices run, as `vkf translate` does.
  o.tuning = tuning_choice(a.tune);
  o.tuning_note = [](const std::string& line) {
    std::fprintf(stderr, "vkf train: %s\n", line.c_str());
  };
  model::TrainSummary s = model::train(replicas, o);
  if (s.interrupted && s.last_checkpoint.empty()) {
    std::fprintf(stderr, "stopped by signal before the first step: nothing to resume from\n");
    return stop_exit_status();
  }
  if (s.interrupted) {
    // After the checkpoint: a status of its own, so that scripts can tell a stopped run from a
    // finished one (130 for SIGINT, 143 for SIGTERM and SIGHUP, as shells report them).
    std::fprintf(stderr, "stopped by signal at step %llu; resume with --resume\n",
                 static_cast<unsigned long long>(s.steps));
    return stop_exit_status();
  }
  if (!a.quiet && s.first_valid && s.last_valid)
    std::fprintf(stderr, "valid loss %.4f -> %.4f (ppl %.2f -> %.2f)\n",
                 s.first_valid->loss_per_token, s.last_valid->loss_per_token,
                 s.first_valid->perplexity(), s.last_valid->perplexity());
  return 0;
}

RegisterCommand reg("train", "Train a Transformer on a parallel corpus", [](CLI::App& sub) {
  auto a = std::make_shared<TrainArgs>();
  model::TrainerOptions& o = a->trainer;
  sub.add_option("--preset", a->preset, "tiny, small, base or big")->capture_default_str();
  add_tune_option(sub, a->tune);
  sub.add_option("--config", a->config_file, "JSON file of model keys (over the preset)")
      ->check(CLI::ExistingFile);
  sub.add_option("--train-sets", a->train_sets, "SRC TGT files, or one TSV file")->required();
  sub.add_option("--valid-sets", a->valid_sets, "SRC TGT files, or one TSV file");
  sub.add_option("--vocab", o.vocab, "SentencePiece model (trained on the train sets if missing)")
      ->required();
  sub.add_option("--vocab-size", a->vocab_size, "Pieces when the vocabulary is trained here")
      ->check(int_range(5, model::k_max_vocab))
      ->capture_default_str();
  sub.add_option("--out", o.out_dir, "Directory for checkpoints and train.jsonl")->required();
  sub.add_option("--max-steps", o.max_steps, "Stop after this many optimizer steps")
      ->check(int_range(1));
  sub.add_option("--max-epochs", o.max_epochs, "Stop after this many epochs")->check(int_range(1));
  sub.add_option("--max-time", a->max_time, "Stop after this long (90s, 15m, 2h, 1h30m)");
  sub.add_option("--seed", o.seed, "Initialisation, shuffling and dropout")
      ->check(int_range(0))
      ->capture_default_str();
  sub.add_option("--device", a->device, "Device: index, vendor, type or name part");
  sub.add_option("--devices", a->devices,
                 "Data-parallel replicas, one per device (e.g. 0,1; repeats allowed)")
      ->delimiter(',');
  sub.add_flag("--resume", o.resume, "Continue the run in --out from its latest checkpoint");
  sub.add_option("--balance-after", o.balance_after,
                 "Steps with equal shares before shares follow each device's speed (0: never)")
      ->check(int_range(0))
      ->capture_default_str();
  sub.add_option("--exchange", a->exchange,
                 "Gradient exchange between replicas: overlapped (with the backward) or after")
      ->check(CLI::IsMember({"overlapped", "after"}))
      ->capture_default_str();

  auto* arch = sub.add_option_group("model", "Model (Table 3 of the paper)");
  arch->add_option("--d-model", a->d_model, "Model width")->check(int_range(1, model::k_max_width));
  arch->add_option("--d-ff", a->d_ff, "Feed-forward inner width")
      ->check(int_range(1, model::k_max_ff));
  arch->add_option("--heads", a->heads, "Attention heads")->check(int_range(1, model::k_max_heads));
  arch->add_option("--d-k", a->d_k, "Per-head key/query size (default d_model/heads)")
      ->check(int_range(1, model::k_max_width));
  arch->add_option("--d-v", a->d_v, "Per-head value size (default d_model/heads)")
      ->check(int_range(1, model::k_max_width));
  arch->add_option("--layers", a->layers, "Encoder and decoder layers")
      ->check(int_range(1, model::k_max_layers));
  arch->add_option("--encoder-layers", a->encoder_layers, "Encoder layers")
      ->check(int_range(1, model::k_max_layers));
  arch->add_option("--decoder-layers", a->decoder_layers, "Decoder layers")
      ->check(int_range(1, model::k_max_layers));
  arch->add_option("--dropout", a->dropout, "Residual and embedding dropout")
      ->check(real_range(0, 1, Bound::closed, Bound::open));
  arch->add_option("--attention-dropout", a->attention_dropout, "Dropout on attention weights")
      ->check(real_range(0, 1, Bound::closed, Bound::open));
  arch->add_option("--label-smoothing", a->label_smoothing, "Label smoothing")
      ->check(real_range(0, 1, Bound::closed, Bound::open));
  arch->add_flag("--learned-positions", a->learned_positions,
                 "Learned instead of sinusoidal positions");
  arch->add_option("--max-positions", a->max_positions, "Positions the model supports (max_len)")
      ->check(int_range(2, model::k_max_positions));

  auto* data = sub.add_option_group("data", "Batching");
  data->add_option("--max-tokens", o.batching.max_tokens,
                   "Tokens a side per micro-batch, padding included (the paper: 25000)")
      ->check(int_range(1))
      ->capture_default_str();
  data->add_option("--accumulate", o.accumulate, "Micro-batches summed into one step")
      ->check(int_range(1, 1000000))
      ->capture_default_str();
  data->add_option("--max-len", o.max_sequence_len, "Longer pairs (in pieces) are skipped")
      ->check(int_range(2, model::k_max_positions))
      ->capture_default_str();

  auto* optim = sub.add_option_group("optimizer", "Optimizer (Adam with the paper's schedule)");
  optim
      ->add_option("--lr", o.adam.lr,
                   "noam: factor on d_model^-0.5 * min(step^-0.5, step * warmup^-1.5); "
                   "constant: the rate")
      ->check(real_range(0, 100, Bound::open))
      ->capture_default_str();
  optim->add_option("--lr-schedule", a->schedule, "noam or constant")->capture_default_str();
  optim->add_option("--warmup-steps", o.adam.warmup_steps, "Warm-up steps")
      ->check(int_range(1, 1000000000))
      ->capture_default_str();
  optim->add_option("--clip-norm", o.adam.max_grad_norm, "Clip the gradient norm (0: off)")
      ->check(real_range(0, INFINITY))
      ->capture_default_str();
  optim->add_option("--beta2", o.adam.beta2, "Adam beta2")
      ->check(real_range(0, 1, Bound::closed, Bound::open))
      ->capture_default_str();
  optim
      ->add_option("--precision", a->precision,
                   "fp32; fp16 (fp16 weight copies, activations and gradients, fp32 master "
                   "weights, Adam state and accumulation, dynamic loss scaling); or auto (fp16 "
                   "on a GPU with 16-bit storage, fp32 on CPU devices)")
      ->capture_default_str();

  auto* out = sub.add_option_group("output", "Logging and checkpoints");
  out->add_option("--log-every", o.log_every, "Steps between progress lines")
      ->check(int_range(1))
      ->capture_default_str();
  out->add_option("--valid-every", o.valid_every, "Steps between validations (0: at the end)")
      ->check(int_range(0))
      ->capture_default_str();
  out->add_option("--save-every", o.save_every, "Steps between checkpoints")
      ->check(int_range(0))
      ->capture_default_str();
  out->add_option("--save-every-minutes", o.save_every_minutes, "Minutes between checkpoints")
      ->check(real_range(0, 1e6))
      ->capture_default_str();
  out->add_option("--keep-checkpoints", o.keep_checkpoints, "Checkpoints kept")
      ->check(int_range(1, 1000000))
      ->capture_default_str();
  out->add_flag("--quiet", a->quiet, "No progress output");
  add_max_line_bytes(sub, o.max_line_bytes);
  return [a]() { return run_train(*a); };
});

}  // namespace
}  // namespace vkf::app
