#include "model/decode/translator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/error.h"

namespace vkf::model::decode {
namespace {

constexpr uint32_t k_length_bucket = 8;
constexpr size_t k_max_graphs = 4;  // recorded shapes kept (each holds its K/V caches)

uint32_t round_up(uint32_t n, uint32_t m, uint32_t cap) {
  return std::min(cap, (n + m - 1) / m * m);
}

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

Translator::Translator(Device& dev, const DeviceParams& params, const TranslateOptions& options)
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
  return *graphs_.emplace(shape, std::make_unique<DecodeGraph>(dev_, params_, shape)).first->second;
}

std::vector<std::vector<Hypothesis>> Translator::translate(
    const std::vector<std::vector<int32_t>>& sources,
    const std::function<void(uint64_t done)>& progress) {
  const uint32_t max_len = uint32_t(config_.max_len);
  std::vector<std::vector<Hypothesis>> results(sources.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty()) order.push_back(i);
  // Longest first: the first batch records the largest shape, later ones usually reuse it.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  auto src_tokens = [&](size_t i) {
    return std::min<uint32_t>(uint32_t(sources[i].size()), max_len - 1) + 1;  // + EOS
  };
  const uint32_t batch = std::min<uint32_t>(options_.batch_size, std::max<size_t>(order.size(), 1));
  const uint32_t K = options_.beam;
  const uint32_t candidates =
      std::min<uint32_t>(uint32_t(config_.vocab_size), 2 * K + 2);  // + pad and bos, never picked
  uint64_t finished = sources.size() - order.size();
  if (progress && finished) progress(finished);
  for (size_t begin = 0; begin < order.size(); begin += batch) {
    const size_t end = std::min(order.size(), begin + batch);
    const uint32_t n = uint32_t(end - begin);
    uint32_t longest = 0, longest_out = 0;
    std::vector<uint32_t> max_out(n);
    for (uint32_t b = 0; b < n; ++b) {
      const uint32_t len = src_tokens(order[begin + b]);
      longest = std::max(longest, len);
      max_out[b] = max_output(len);
      longest_out = std::max(longest_out, max_out[b]);
    }
    DecodeShape shape;
    shape.batch = batch;
    shape.beam = K;
    shape.src_len = round_up(longest, k_length_bucket, max_len);
    shape.max_out = round_up(longest_out, k_length_bucket, max_len);
    shape.candidates = candidates;
    DecodeGraph& g = graph(shape);

    std::vector<int32_t> src(size_t{batch} * shape.src_len, config_.pad_id), lens(batch, 1);
    for (uint32_t b = 0; b < batch; ++b) {
      int32_t* row = src.data() + size_t{b} * shape.src_len;
      if (b >= n) {  // padding sentence: EOS only, not searched
        row[0] = config_.eos_id;
        continue;
      }
      const auto& s = sources[order[begin + b]];
      const uint32_t len = src_tokens(order[begin + b]);
      std::copy_n(s.begin(), len - 1, row);
      row[len - 1] = config_.eos_id;
      lens[b] = int32_t(len);
      stats_.source_tokens += len;
    }
    g.encode(src, lens);
    std::vector<std::vector<Hypothesis>> found;
    if (K == 1) {
      for (auto& h : greedy_search(g, config_, max_out, options_.alpha)) found.push_back({h});
    } else {
      found = beam_search(g, config_, max_out, {options_.alpha, options_.nbest});
    }
    for (uint32_t b = 0; b < n; ++b) {
      if (!found[b].empty()) stats_.output_tokens += found[b][0].length();
      results[order[begin + b]] = std::move(found[b]);
    }
    stats_.sentences += n;
    finished += n;
    if (progress) progress(finished);
  }
  return results;
}

}  // namespace vkf::model::decode
