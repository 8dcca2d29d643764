#include "model/config.h"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "engine/error.h"
#include "engine/json_limits.h"

namespace vkf::model {

void ModelConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("invalid model config: " + what);
  };
  auto in = [&](int v, int lo, int hi, const char* key) {
    need(v >= lo && v <= hi, std::string(key) + " must be in [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "], got " + std::to_string(v));
  };
  // Upper bounds far above any model in the literature (the paper's big model: d_model 1024,
  // d_ff 4096, 16 heads, 6 layers, 37k pieces) that keep every size a checkpoint's header can
  // claim within what int64 shape arithmetic and one device allocation can hold.
  in(d_model, 1, k_max_width, "d_model");
  in(d_ff, 1, k_max_ff, "d_ff");
  in(heads, 1, k_max_heads, "heads");
  need(d_k != 0 || d_model % heads == 0, "d_model must be divisible by heads (or set d_k/d_v)");
  in(head_dim_k(), 1, k_max_width, "d_k");
  in(head_dim_v(), 1, k_max_width, "d_v");
  in(encoder_layers, 1, k_max_layers, "encoder_layers");
  in(decoder_layers, 1, k_max_layers, "decoder_layers");
  in(vocab_size, 5, k_max_vocab, "vocab_size");
  in(max_len, 2, k_max_positions, "max_len");
  for (auto [id, key] : {std::pair{pad_id, "pad_id"}, std::pair{unk_id, "unk_id"},
                         std::pair{bos_id, "bos_id"}, std::pair{eos_id, "eos_id"}})
    in(id, 0, vocab_size - 1, key);
  need(dropout >= 0 && dropout < 1, "dropout must be in [0, 1)");
  need(attention_dropout >= 0 && attention_dropout < 1, "attention_dropout must be in [0, 1)");
  need(label_smoothing >= 0 && label_smoothing < 1, "label_smoothing must be in [0, 1)");
  need(layer_norm_eps > 0 && layer_norm_eps <= 1, "layer_norm_eps must be in (0, 1]");
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
  if (!j.is_object())
    throw Error(std::string("model config: expected a JSON object, got ") + j.type_name());
  ModelConfig c;
  auto bad = [](const char* key, const std::string& want, const nlohmann::json& v) {
    return Error(std::string("model config: ") + key + " must be " + want + ", got " +
                 json_excerpt(v));
  };
  // Strict types (engine/json_limits.h): nlohmann's get<int>() would take 64.5 as 64 and
  // 4294967301 as 5.
  auto get_int = [&](const char* key, int& field) {
    if (j.contains(key)) field = json_number<int>(j.at(key), std::string("model config: ") + key);
  };
  auto get_float = [&](const char* key, float& field) {
    if (j.contains(key)) field = json_number<float>(j.at(key), std::string("model config: ") + key);
  };
  auto get_bool = [&](const char* key, bool& field) {
    if (!j.contains(key)) return;
    if (!j.at(key).is_boolean()) throw bad(key, "true or false", j.at(key));
    field = j.at(key).get<bool>();
  };
  auto get_string = [&](const char* key, std::string& field) {
    if (!j.contains(key)) return;
    if (!j.at(key).is_string()) throw bad(key, "a string", j.at(key));
    field = j.at(key).get<std::string>();
  };
  get_int("d_model", c.d_model);
  get_int("d_ff", c.d_ff);
  get_int("heads", c.heads);
  get_int("d_k", c.d_k);
  get_int("d_v", c.d_v);
  get_int("encoder_layers", c.encoder_layers);
  get_int("decoder_layers", c.decoder_layers);
  get_int("vocab_size", c.vocab_size);
  get_int("max_len", c.max_len);
  get_float("dropout", c.dropout);
  get_float("attention_dropout", c.attention_dropout);
  get_float("label_smoothing", c.label_smoothing);
  get_float("layer_norm_eps", c.layer_norm_eps);
  get_bool("learned_positions", c.learned_positions);
  get_int("pad_id", c.pad_id);
  get_int("unk_id", c.unk_id);
  get_int("bos_id", c.bos_id);
  get_int("eos_id", c.eos_id);
  get_string("tokenizer", c.tokenizer);
  get_string("tokenizer_sha256", c.tokenizer_sha256);
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
