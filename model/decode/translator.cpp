#include "model/decode/translator.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"

namespace vkf::model::decode {
namespace {

constexpr size_t k_max_graphs = 4;  // recorded shapes kept (each holds its K/V caches)

}  // namespace

void TranslateOptions::validate() const {
  if (beam == 0 || beam > k_max_beam)
    throw Error("translate: beam must be in [1, " + std::to_string(k_max_beam) + "], got " +
                std::to_string(beam));
  if (nbest == 0 || nbest > beam)
    throw Error("translate: nbest " + std::to_string(nbest) + " must be in 1..beam (" +
                std::to_string(beam) + ")");
  if (!(alpha >= 0.0f)) throw Error("translate: alpha must be >= 0");
  if (!(max_len_a >= 0.0f)) throw Error("translate: max-len-a must be >= 0");
  if (max_len_b < 0)
    throw Error("translate: max-len-b must be >= 0, got " + std::to_string(max_len_b) +
                " (a negative one silently cut outputs to a single token)");
  if (max_len_a == 0.0f && max_len_b < 2)
    throw Error("translate: with max-len-a 0, max-len-b must be >= 2 (one token and EOS), got " +
                std::to_string(max_len_b));
  if (batch_size == 0) throw Error("translate: batch size must be positive");
}

Translator::Translator(Device& dev, const DeviceWeights& params, const TranslateOptions& options)
    : dev_(dev), params_(params), config_(params.config()), options_(options) {
  options_.validate();
}

Translator::~Translator() = default;

uint32_t Translator::max_output(uint32_t source_tokens) const {
  const double m = std::floor(double(options_.max_len_a) * source_tokens) + options_.max_len_b;
  return uint32_t(std::clamp<double>(m, 1.0, double(config_.max_len)));
}

DecodeGraph& Translator::graph(const DecodeShape& shape) {
  auto it = graphs_.find(shape);
  if (it != graphs_.end()) return *it->second;
  if (graphs_.size() >= k_max_graphs) graphs_.clear();
  return *graphs_
              .emplace(shape,
                       std::make_unique<DecodeGraph>(dev_, params_, shape, false, options_.timed))
              .first->second;
}

std::vector<std::vector<Hypothesis>> Translator::translate(
    const std::vector<std::vector<int32_t>>& sources,
    const std::function<void(uint64_t done)>& progress) {
  TranslationJob job = start(sources, progress);
  while (job.step()) {
  }
  return job.take_results();
}

TranslationJob Translator::start(const std::vector<std::vector<int32_t>>& sources,
                                 const std::function<void(uint64_t done)>& progress) {
  if (job_open_) throw Error("translate: this translator is already running a translation job");
  return TranslationJob(*this, sources, progress);
}

uint64_t Translator::cache_bytes() const {
  uint64_t n = 0;
  for (const auto& [shape, g] : graphs_) n += g->bytes();
  return n;
}

}  // namespace vkf::model::decode
