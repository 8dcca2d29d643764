#include "model/config.h"

#include "engine/error.h"

namespace vkf::model {

void ModelConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("invalid model config: " + what);
  };
  need(d_model > 0, "d_model must be positive");
  need(d_ff > 0, "d_ff must be positive");
  need(heads > 0, "heads must be positive");
  need(d_k != 0 || d_model % heads == 0, "d_model must be divisible by heads (or set d_k/d_v)");
  need(head_dim_k() > 0 && head_dim_v() > 0, "d_k and d_v must be positive");
  need(encoder_layers >= 1 && decoder_layers >= 1,
       "encoder_layers and decoder_layers must be >= 1");
  need(vocab_size > 4, "vocab_size must exceed the 4 special tokens");
  need(max_len > 1, "max_len must be > 1");
  need(dropout >= 0 && dropout < 1, "dropout must be in [0, 1)");
  need(attention_dropout >= 0 && attention_dropout < 1, "attention_dropout must be in [0, 1)");
  need(label_smoothing >= 0 && label_smoothing < 1, "label_smoothing must be in [0, 1)");
  need(layer_norm_eps > 0, "layer_norm_eps must be positive");
}

nlohmann::json ModelConfig::to_json() const {
  return {{"d_model", d_model},
          {"d_ff", d_ff},
          {"heads", heads},
          {"d_k", head_dim_k()},
          {"d_v", head_dim_v()},
          {"encoder_layers", encoder_layers},
          {"decoder_layers", decoder_layers},
          {"vocab_size", vocab_size},
          {"max_len", max_len},
          {"dropout", dropout},
          {"attention_dropout", attention_dropout},
          {"label_smoothing", label_smoothing},
          {"layer_norm_eps", layer_norm_eps},
          {"learned_positions", learned_positions},
          {"pad_id", pad_id},
          {"unk_id", unk_id},
          {"bos_id", bos_id},
          {"eos_id", eos_id},
          {"tokenizer", tokenizer},
          {"tokenizer_sha256", tokenizer_sha256}};
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  ModelConfig c;
  auto get = [&](const char* key, auto& field) {
    if (j.contains(key)) j.at(key).get_to(field);
  };
  try {
    get("d_model", c.d_model);
    get("d_ff", c.d_ff);
    get("heads", c.heads);
    get("d_k", c.d_k);
    get("d_v", c.d_v);
    get("encoder_layers", c.encoder_layers);
    get("decoder_layers", c.decoder_layers);
    get("vocab_size", c.vocab_size);
    get("max_len", c.max_len);
    get("dropout", c.dropout);
    get("attention_dropout", c.attention_dropout);
    get("label_smoothing", c.label_smoothing);
    get("layer_norm_eps", c.layer_norm_eps);
    get("learned_positions", c.learned_positions);
    get("pad_id", c.pad_id);
    get("unk_id", c.unk_id);
    get("bos_id", c.bos_id);
    get("eos_id", c.eos_id);
    get("tokenizer", c.tokenizer);
    get("tokenizer_sha256", c.tokenizer_sha256);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("model config: ") + e.what());
  }
  return c;
}

ModelConfig ModelConfig::preset(const std::string& name) {
  ModelConfig c;  // defaults are the paper's base model
  if (name == "base") return c;
  if (name == "big") {
    c.d_model = 1024;
    c.d_ff = 4096;
    c.heads = 16;
    c.dropout = 0.3f;
    return c;
  }
  if (name == "small") {  // sized for a CPU device: minutes per epoch on the bundled sample
    c.d_model = 256;
    c.d_ff = 1024;
    c.heads = 4;
    c.encoder_layers = c.decoder_layers = 3;
    c.max_len = 256;
    return c;
  }
  if (name == "tiny") {  // for tests and the quick demo
    c.d_model = 64;
    c.d_ff = 256;
    c.heads = 4;
    c.encoder_layers = c.decoder_layers = 2;
    c.max_len = 256;
    return c;
  }
  throw Error("unknown preset '" + name + "' (tiny, small, base, big)");
}

}  // namespace vkf::model
