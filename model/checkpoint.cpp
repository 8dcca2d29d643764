#include "model/checkpoint.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "engine/error.h"

namespace vkf::model {
namespace fs = std::filesystem;

void write_safetensors(const std::string& path, const std::map<std::string, std::string>& metadata,
                       const std::vector<TensorRecord>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    uint64_t n = 1;
    for (auto d : t.shape) n *= static_cast<uint64_t>(d);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + n * 4}}};
    offset += n * 4;
  }
  std::string text = header.dump();
  while ((text.size() + 8) % 8 != 0) text += ' ';  // keeps the tensor data 8-byte aligned
  uint64_t header_size = text.size();

  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
    out.write(reinterpret_cast<const char*>(&header_size), 8);  // little-endian hosts only
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : tensors) {
      uint64_t n = 1;
      for (auto d : t.shape) n *= static_cast<uint64_t>(d);
      out.write(reinterpret_cast<const char*>(t.data), static_cast<std::streamsize>(n * 4));
    }
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("writing " + tmp + " failed (disk full?)");
    }
  }
  // Flush to disk before the rename makes it the checkpoint.
  if (FILE* f = std::fopen(tmp.c_str(), "rb")) {
    ::fsync(fileno(f));
    std::fclose(f);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw Error("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open checkpoint " + path + ": " + std::strerror(errno));
  bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return Error(path + " is not a valid safetensors checkpoint: " + why);
  };
  if (bytes_.size() < 8) throw bad("file is only " + std::to_string(bytes_.size()) + " bytes");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes_.data(), 8);
  if (header_size < 2 || header_size > bytes_.size() - 8)
    throw bad("header size " + std::to_string(header_size) + " does not fit a file of " +
              std::to_string(bytes_.size()) + " bytes (truncated or another format)");
  data_start_ = 8 + header_size;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes_.begin() + 8, bytes_.begin() + 8 + header_size);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  const uint64_t data_bytes = bytes_.size() - data_start_;
  for (auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw bad("__metadata__ is not an object");
      for (auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw bad("metadata '" + mk + "' is not a string");
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    try {
      Entry e;
      if (value.at("dtype").get<std::string>() != "F32")
        throw bad("tensor " + key + " has dtype " + value.at("dtype").get<std::string>() +
                  "; vkformer reads F32");
      e.shape = value.at("shape").get<std::vector<int64_t>>();
      auto offs = value.at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2 || offs[0] > offs[1]) throw bad("tensor " + key + ": bad data_offsets");
      e.begin = offs[0];
      e.end = offs[1];
      uint64_t n = 1;
      for (auto d : e.shape) {
        if (d < 0) throw bad("tensor " + key + ": negative dimension");
        n *= static_cast<uint64_t>(d);
      }
      if (e.end - e.begin != n * 4) throw bad("tensor " + key + ": size does not match its shape");
      if (e.end > data_bytes)
        throw bad("tensor " + key + " ends at byte " + std::to_string(e.end) +
                  " but the file has " + std::to_string(data_bytes) + " data bytes (truncated)");
      tensors_[key] = std::move(e);
    } catch (const nlohmann::json::exception& ex) {
      throw bad("tensor " + key + ": " + ex.what());
    }
  }
}

const std::vector<int64_t>& SafetensorsFile::shape(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + " has no tensor " + name);
  return it->second.shape;
}

const float* SafetensorsFile::data(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + " has no tensor " + name);
  return reinterpret_cast<const float*>(bytes_.data() + data_start_ + it->second.begin);
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : tensors_) out.push_back(k);
  return out;
}

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
  SafetensorsFile file(path);
  auto it = file.metadata().find("config");
  if (it == file.metadata().end())
    throw Error(path + " has no `config` metadata: not a vkformer checkpoint");
  Checkpoint ck;
  try {
    ck.config = ModelConfig::from_json(nlohmann::json::parse(it->second));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": config metadata is not JSON: " + e.what());
  }
  ck.config.validate();
  if (auto s = file.metadata().find("step"); s != file.metadata().end())
    ck.step = std::stoull(s->second);
  ParamLayout layout(ck.config);
  ck.params.assign(layout.total_floats(), 0.0f);
  for (const auto& p : layout.params()) {
    if (!file.contains(p.name))
      throw Error(path + " lacks tensor " + p.name + " that its config implies");
    if (file.shape(p.name) != p.shape)
      throw Error(path + ": tensor " + p.name + " has the wrong shape for its config");
    std::memcpy(ck.params.data() + p.offset, file.data(p.name), static_cast<size_t>(p.numel()) * 4);
  }
  return ck;
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
      throw Error(what + " has another model config: " + k + " is " + b[k].dump() + ", expected " +
                  v.dump());
}

std::string checkpoint_name(uint64_t step) {
  return "checkpoint-" + std::to_string(step) + ".safetensors";
}

std::string resolve_checkpoint(const std::string& file_or_dir) {
  if (!fs::exists(file_or_dir)) throw Error("model " + file_or_dir + " does not exist");
  if (!fs::is_directory(file_or_dir)) return file_or_dir;
  static const std::regex pattern(R"(checkpoint-(\d+)\.safetensors)");
  std::string best;
  uint64_t best_step = 0;
  for (const auto& entry : fs::directory_iterator(file_or_dir)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) {
      uint64_t step = std::stoull(m[1]);
      if (best.empty() || step > best_step) {
        best = entry.path().string();
        best_step = step;
      }
    }
  }
  if (best.empty()) throw Error("no checkpoint-<step>.safetensors in " + file_or_dir);
  return best;
}

}  // namespace vkf::model
