#include "model/train/train_state.h"

#include <bit>
#include <cmath>
#include <filesystem>

#include "engine/error.h"
#include "model/checkpoint.h"

namespace vkf::model {

namespace {

uint64_t metadata_u64(const SafetensorsFile& file, const std::string& path, const char* key) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end()) throw Error(path + ": optimizer state lacks `" + key + "`");
  const auto v = parse_decimal_u64(it->second);
  if (!v)
    throw Error(path + ": optimizer state has a bad `" + key + "`: '" + it->second +
                "' (not a non-negative whole number)");
  return *v;
}

}  // namespace

std::string train_state_name(uint64_t step) {
  return "checkpoint-" + std::to_string(step) + ".optimizer.safetensors";
}

std::string train_state_path(const std::string& checkpoint_path) {
  const std::string suffix = ".safetensors";
  std::string base = checkpoint_path;
  if (base.size() > suffix.size() && base.ends_with(suffix))
    base.resize(base.size() - suffix.size());
  return base + ".optimizer" + suffix;
}

void save_train_state(const std::string& path, const TrainState& s) {
  if (s.adam_m.size() != s.adam_v.size())
    throw Error("save_train_state: Adam moments of different sizes");
  if (s.params_checksum.empty())
    throw Error("save_train_state: no checksum of the checkpoint's parameters");
  const auto n = static_cast<int64_t>(s.adam_m.size());
  // Elapsed time is stored in milliseconds: metadata values are strings and integers parse
  // unambiguously.
  write_safetensors(
      path,
      {{"format", "vkformer-optimizer"},
       {"step", std::to_string(s.step)},
       {"epoch", std::to_string(s.position.epoch)},
       {"batch", std::to_string(s.position.batch)},
       {"seed", std::to_string(s.seed)},
       {"tokens_seen", std::to_string(s.tokens_seen)},
       {"elapsed_ms", std::to_string(uint64_t(s.elapsed_seconds * 1000.0))},
       {"train_pairs", std::to_string(s.train_pairs)},
       {"params_checksum", s.params_checksum},
       // The scale's bits, so it comes back exactly.
       {"loss_scale_bits", std::to_string(std::bit_cast<uint32_t>(s.loss_scale.scale))},
       {"loss_scale_clean_steps", std::to_string(s.loss_scale.clean_steps)},
       {"skipped_steps", std::to_string(s.loss_scale.skipped)}},
      {{"adam.m", {n}, s.adam_m.data()}, {"adam.v", {n}, s.adam_v.data()}});
}

TrainState load_train_state(const std::string& path, uint64_t expected_floats) {
  if (!std::filesystem::exists(path))
    throw Error("optimizer state " + path +
                " is missing, so the run cannot be resumed from its checkpoint");
  return train_state_from(SafetensorsFile(path), expected_floats);
}

TrainState train_state_from(const SafetensorsFile& file, uint64_t expected_floats) {
  const std::string& path = file.path();
  auto fmt = file.metadata().find("format");
  if (fmt == file.metadata().end() || fmt->second != "vkformer-optimizer")
    throw Error(path + " is not a vkformer optimizer-state file");
  TrainState s;
  s.step = metadata_u64(file, path, "step");
  s.position.epoch = metadata_u64(file, path, "epoch");
  s.position.batch = metadata_u64(file, path, "batch");
  s.seed = metadata_u64(file, path, "seed");
  s.tokens_seen = metadata_u64(file, path, "tokens_seen");
  s.elapsed_seconds = double(metadata_u64(file, path, "elapsed_ms")) / 1000.0;
  const uint64_t pairs = metadata_u64(file, path, "train_pairs");
  if (pairs > uint64_t(INT64_MAX))
    throw Error(path + ": optimizer state has a bad `train_pairs`: " + std::to_string(pairs));
  s.train_pairs = int64_t(pairs);
  // Files written before the checksum existed lack it: the caller decides what that means.
  if (auto c = file.metadata().find("params_checksum"); c != file.metadata().end()) {
    if (c->second.size() != 16 ||
        c->second.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error(path + ": optimizer state has a bad `params_checksum`: '" + c->second + "'");
    s.params_checksum = c->second;
  }
  // Files of runs before mixed precision lack the loss scale: they keep the defaults.
  if (file.metadata().count("loss_scale_bits")) {
    const uint64_t bits = metadata_u64(file, path, "loss_scale_bits");
    const float scale = std::bit_cast<float>(uint32_t(bits));
    if (bits > 0xFFFFFFFFull || !std::isfinite(scale) || !(scale > 0))
      throw Error(path + ": optimizer state has a bad `loss_scale_bits`: " + std::to_string(bits));
    s.loss_scale.scale = scale;
    const uint64_t clean = metadata_u64(file, path, "loss_scale_clean_steps");
    if (clean > 0xFFFFFFFFull)
      throw Error(path + ": optimizer state has a bad `loss_scale_clean_steps`");
    s.loss_scale.clean_steps = uint32_t(clean);
    s.loss_scale.skipped = metadata_u64(file, path, "skipped_steps");
  }
  if (file.names().size() != 2)
    throw Error(path + " holds " + std::to_string(file.names().size()) +
                " tensors; an optimizer state holds adam.m and adam.v");
  for (const char* name : {"adam.m", "adam.v"}) {
    if (!file.contains(name)) throw Error(path + " lacks tensor " + name);
    const auto& shape = file.shape(name);
    if (shape.size() != 1 || uint64_t(shape[0]) != expected_floats)
      throw Error(path + ": " + name + " holds " + std::to_string(file.numel(name)) +
                  " floats but the model has " + std::to_string(expected_floats) +
                  " (the state of another model)");
    auto& out = std::string(name) == "adam.m" ? s.adam_m : s.adam_v;
    out.resize(expected_floats);
    file.copy(name, out.data());
  }
  return s;
}

}  // namespace vkf::model
