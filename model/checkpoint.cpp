#include "model/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/json_limits.h"

namespace vkf::model {
namespace fs = std::filesystem;

void save_checkpoint(const std::string& path, const ModelConfig& config, const ParamLayout& layout,
                     const std::vector<float>& flat, uint64_t step) {
  if (flat.size() != layout.total_floats())
    throw Error("save_checkpoint: parameter buffer has " + std::to_string(flat.size()) +
                " floats, the layout " + std::to_string(layout.total_floats()));
  std::vector<TensorRecord> records;
  for (const auto& p : layout.params())
    records.push_back({p.name, p.shape, flat.data() + p.offset});
  write_safetensors(
      path,
      {{"config", config.to_json().dump()}, {"step", std::to_string(step)}, {"format", "vkformer"}},
      records);
}

Checkpoint load_checkpoint(const std::string& path) {
  return checkpoint_from(SafetensorsFile(path));
}

Checkpoint checkpoint_from(const SafetensorsFile& file) {
  const std::string& path = file.path();
  auto it = file.metadata().find("config");
  if (it == file.metadata().end())
    throw Error(path + " has no `config` metadata: not a vkformer checkpoint");
  Checkpoint ck;
  try {
    ck.config = ModelConfig::from_json(parse_json(it->second, "the config metadata"));
    ck.config.validate();
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": the config metadata is not JSON: " + e.what());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  if (auto s = file.metadata().find("step"); s != file.metadata().end()) {
    const auto step = parse_decimal_u64(s->second);
    if (!step)
      throw Error(path + ": metadata `step` is '" + s->second +
                  "', not a non-negative whole number");
    ck.step = *step;
  }
  // Names and shapes first, allocation after: the tensors' sizes are checked against the file's
  // length, so once they match the config, the config cannot claim more than the file holds.
  const ParamLayout layout(ck.config);
  for (const auto& p : layout.params()) {
    if (!file.contains(p.name))
      throw Error(path + " lacks tensor " + p.name + " that its config implies");
    if (file.shape(p.name) != p.shape)
      throw Error(path + ": tensor " + p.name + " has shape " +
                  nlohmann::json(file.shape(p.name)).dump() + " but its config implies " +
                  nlohmann::json(p.shape).dump());
  }
  for (const auto& name : file.names())
    if (!layout.contains(name))
      throw Error(path + " holds tensor " + name + ", which its config (" +
                  std::to_string(ck.config.encoder_layers) + " encoder and " +
                  std::to_string(ck.config.decoder_layers) + " decoder layers" +
                  (ck.config.learned_positions ? ", learned positions" : "") +
                  ") does not have: the config and the tensors disagree");
  ck.params.assign(layout.total_floats(), 0.0f);
  for (const auto& p : layout.params()) file.copy(p.name, ck.params.data() + p.offset);
  return ck;
}

std::string params_checksum(const ParamLayout& layout, const std::vector<float>& flat) {
  if (flat.size() != layout.total_floats())
    throw Error("params_checksum: " + std::to_string(flat.size()) + " floats for a layout of " +
                std::to_string(layout.total_floats()));
  uint64_t h = 1469598103934665603ull;
  for (const auto& p : layout.params()) {
    const auto* b = reinterpret_cast<const unsigned char*>(flat.data() + p.offset);
    for (uint64_t i = 0; i < uint64_t(p.numel()) * 4; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void require_compatible(const ModelConfig& want, const ModelConfig& got, const std::string& what) {
  auto a = want.to_json(), b = got.to_json();
  // Regularisation settings may differ (fine-tuning with another dropout); shapes may not.
  for (const char* k : {"dropout", "attention_dropout", "label_smoothing", "tokenizer"}) {
    a.erase(k);
    b.erase(k);
  }
  if (!want.tokenizer_sha256.empty() && !got.tokenizer_sha256.empty() &&
      want.tokenizer_sha256 != got.tokenizer_sha256)
    throw Error(what + " was trained with another vocabulary (tokenizer checksum " +
                got.tokenizer_sha256.substr(0, 12) + " vs " + want.tokenizer_sha256.substr(0, 12) +
                ")");
  a.erase("tokenizer_sha256");
  b.erase("tokenizer_sha256");
  for (auto& [k, v] : a.items())
    if (b[k] != v)
      throw Error(what + " has another model config: " + k + " is " + json_excerpt(b[k]) +
                  ", expected " + json_excerpt(v));
}

std::string checkpoint_name(uint64_t step) {
  return "checkpoint-" + std::to_string(step) + ".safetensors";
}

std::optional<std::string> first_nonfinite(const ParamLayout& layout,
                                           const std::vector<float>& flat) {
  for (const auto& p : layout.params())
    for (int64_t i = 0; i < p.numel(); ++i) {
      const float v = flat[p.offset + uint64_t(i)];
      if (!std::isfinite(v))
        return "tensor " + p.name + ", element " + std::to_string(i) + " is " +
               (std::isnan(v) ? "NaN"
                : v > 0       ? "+Inf"
                              : "-Inf");
    }
  return std::nullopt;
}

std::vector<std::pair<uint64_t, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    // checkpoint-<decimal step>.safetensors; a step past 2^64 cannot be ours: not a checkpoint
    // name (std::stoull would throw "stoull").
    const std::string name = entry.path().filename().string();
    const std::string_view prefix = "checkpoint-", suffix = ".safetensors";
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
        !name.ends_with(suffix))
      continue;
    const std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (auto step = parse_decimal_u64(digits)) out.emplace_back(*step, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string resolve_checkpoint(const std::string& file_or_dir) {
  std::error_code ec;
  if (!fs::exists(file_or_dir, ec)) throw Error("model " + file_or_dir + " does not exist");
  if (!fs::is_directory(file_or_dir, ec)) return file_or_dir;
  const auto all = list_checkpoints(file_or_dir);
  if (all.empty()) throw Error("no checkpoint-<step>.safetensors in " + file_or_dir);
  return all.back().second;
}

}  // namespace vkf::model
