#pragma once
// Model hyper-parameters: the paper's presets and every knob of its Table 3. Serialised into the
// checkpoint's `config` metadata with the key names fixed by docs/design.md.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace vkf::model {

// Bounds ModelConfig::validate enforces (see there).
constexpr int k_max_width = 1 << 16;  // d_model, d_k, d_v
constexpr int k_max_ff = 1 << 20;     // d_ff
constexpr int k_max_heads = 1024;
constexpr int k_max_layers = 1024;        // per stack
constexpr int k_max_vocab = 1 << 24;      // vocab_size
constexpr int k_max_positions = 1 << 16;  // max_len

struct ModelConfig {
  int d_model = 512;
  int d_ff = 2048;
  int heads = 8;
  int d_k = 0;  // per-head key/query size; 0 = d_model / heads
  int d_v = 0;  // per-head value size; 0 = d_model / heads
  int encoder_layers = 6;
  int decoder_layers = 6;
  int vocab_size = 0;
  int max_len = 1024;
  float dropout = 0.1f;
  float attention_dropout = 0.0f;
  float label_smoothing = 0.1f;
  float layer_norm_eps = 1e-6f;
  bool learned_positions = false;
  int pad_id = 0;
  int unk_id = 1;
  int bos_id = 2;
  int eos_id = 3;
  std::string tokenizer;         // file name of the SentencePiece model
  std::string tokenizer_sha256;  // its checksum, so a checkpoint refuses another vocabulary

  int head_dim_k() const { return d_k ? d_k : d_model / heads; }
  int head_dim_v() const { return d_v ? d_v : d_model / heads; }
  // Throws vkf::Error naming the offending key.
  void validate() const;
  nlohmann::json to_json() const;
  static ModelConfig from_json(const nlohmann::json& j);
  // "tiny", "small", "base", "big".
  static ModelConfig preset(const std::string& name);
};

}  // namespace vkf::model
