#include "model/params.h"

#include <cmath>
#include <random>

#include "engine/error.h"

namespace vkf::model {

int64_t ParamInfo::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

ParamLayout::ParamLayout(const ModelConfig& c) {
  const int64_t d = c.d_model, ff = c.d_ff, V = c.vocab_size;
  const int64_t dq = int64_t{c.heads} * c.head_dim_k(), dv = int64_t{c.heads} * c.head_dim_v();
  add("embed.weight", {V, d});
  if (c.learned_positions) add("pos_embed.weight", {c.max_len, d});
  auto attention = [&](const std::string& p) {
    add(p + ".q_proj.weight", {dq, d});
    add(p + ".q_proj.bias", {dq});
    add(p + ".k_proj.weight", {dq, d});
    add(p + ".k_proj.bias", {dq});
    add(p + ".v_proj.weight", {dv, d});
    add(p + ".v_proj.bias", {dv});
    add(p + ".o_proj.weight", {d, dv});
    add(p + ".o_proj.bias", {d});
  };
  auto norm = [&](const std::string& p) {
    add(p + ".weight", {d});
    add(p + ".bias", {d});
  };
  auto ffn = [&](const std::string& p) {
    add(p + ".fc1.weight", {ff, d});
    add(p + ".fc1.bias", {ff});
    add(p + ".fc2.weight", {d, ff});
    add(p + ".fc2.bias", {d});
  };
  for (int i = 0; i < c.encoder_layers; ++i) {
    std::string p = "encoder.layers." + std::to_string(i);
    attention(p + ".self_attn");
    norm(p + ".self_attn_norm");
    ffn(p + ".ffn");
    norm(p + ".ffn_norm");
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    std::string p = "decoder.layers." + std::to_string(i);
    attention(p + ".self_attn");
    norm(p + ".self_attn_norm");
    attention(p + ".cross_attn");
    norm(p + ".cross_attn_norm");
    ffn(p + ".ffn");
    norm(p + ".ffn_norm");
  }
}

std::vector<uint64_t> layer_boundaries(const ParamLayout& layout) {
  auto layer_of = [](const std::string& name) {
    for (const char* stack : {"encoder.layers.", "decoder.layers."}) {
      const size_t n = std::char_traits<char>::length(stack);
      if (name.compare(0, n, stack) == 0) return name.substr(0, name.find('.', n) + 1);
    }
    return std::string();
  };
  std::vector<uint64_t> out;
  const auto& params = layout.params();
  for (size_t i = 1; i < params.size(); ++i)
    if (layer_of(params[i].name) != layer_of(params[i - 1].name)) out.push_back(params[i].offset);
  return out;
}

void ParamLayout::add(const std::string& name, std::vector<int64_t> shape) {
  ParamInfo p{name, std::move(shape), total_};
  total_ += (static_cast<uint64_t>(p.numel()) + 63) / 64 * 64;
  index_[name] = params_.size();
  params_.push_back(std::move(p));
}

const ParamInfo& ParamLayout::at(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("no parameter named '" + name + "' in this model");
  return params_[it->second];
}

uint64_t ParamLayout::parameter_count() const {
  uint64_t n = 0;
  for (const auto& p : params_) n += static_cast<uint64_t>(p.numel());
  return n;
}

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<float> init_parameters(const ParamLayout& layout, const ModelConfig& config,
                                   uint64_t seed) {
  std::vector<float> flat(layout.total_floats(), 0.0f);
  std::mt19937_64 rng(seed);
  for (const auto& p : layout.params()) {
    float* w = flat.data() + p.offset;
    const int64_t n = p.numel();
    if (p.name == "embed.weight" || p.name == "pos_embed.weight") {
      std::normal_distribution<float> dist(0.0f, std::pow(float(config.d_model), -0.5f));
      for (int64_t i = 0; i < n; ++i) w[i] = dist(rng);
      if (p.name == "embed.weight")  // the padding row stays zero, as in fairseq
        for (int64_t j = 0; j < config.d_model; ++j)
          w[int64_t{config.pad_id} * config.d_model + j] = 0;
    } else if (ends_with(p.name, "norm.weight")) {
      for (int64_t i = 0; i < n; ++i) w[i] = 1.0f;
    } else if (ends_with(p.name, ".weight")) {
      // Xavier uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)).
      float a = std::sqrt(6.0f / float(p.shape[0] + p.shape[1]));
      std::uniform_real_distribution<float> dist(-a, a);
      for (int64_t i = 0; i < n; ++i) w[i] = dist(rng);
    }  // biases stay zero
  }
  return flat;
}

}  // namespace vkf::model
