#include "model/train/train_state.h"

#include <filesystem>

#include "engine/error.h"
#include "model/checkpoint.h"

namespace vkf::model {

namespace {

uint64_t metadata_u64(const SafetensorsFile& file, const std::string& path, const char* key) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end()) throw Error(path + ": optimizer state lacks `" + key + "`");
  try {
    size_t used = 0;
    uint64_t v = std::stoull(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument(key);
    return v;
  } catch (const std::exception&) {
    throw Error(path + ": optimizer state has a bad `" + key + "`: '" + it->second + "'");
  }
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
  const auto n = static_cast<int64_t>(s.adam_m.size());
  // Elapsed time is stored in milliseconds: metadata values are strings and integers parse
  // unambiguously.
  write_safetensors(path,
                    {{"format", "vkformer-optimizer"},
                     {"step", std::to_string(s.step)},
                     {"epoch", std::to_string(s.position.epoch)},
                     {"batch", std::to_string(s.position.batch)},
                     {"seed", std::to_string(s.seed)},
                     {"tokens_seen", std::to_string(s.tokens_seen)},
                     {"elapsed_ms", std::to_string(uint64_t(s.elapsed_seconds * 1000.0))},
                     {"train_pairs", std::to_string(s.train_pairs)}},
                    {{"adam.m", {n}, s.adam_m.data()}, {"adam.v", {n}, s.adam_v.data()}});
}

TrainState load_train_state(const std::string& path, uint64_t expected_floats) {
  if (!std::filesystem::exists(path))
    throw Error("optimizer state " + path +
                " is missing, so the run cannot be resumed from its checkpoint");
  SafetensorsFile file(path);
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
  s.train_pairs = int64_t(metadata_u64(file, path, "train_pairs"));
  for (const char* name : {"adam.m", "adam.v"}) {
    if (!file.contains(name)) throw Error(path + " lacks tensor " + name);
    const auto& shape = file.shape(name);
    if (shape.size() != 1 || uint64_t(shape[0]) != expected_floats)
      throw Error(path + ": " + name + " does not match the model's parameter count");
    const float* p = file.data(name);
    (std::string(name) == "adam.m" ? s.adam_m : s.adam_v).assign(p, p + expected_floats);
  }
  return s;
}

}  // namespace vkf::model
