#include "model/decode/translator.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"

namespace vkf::model::decode {
namespace {

constexpr uint32_t k_length_bucket = 8;

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

Translator::Translator(Device& dev, const DeviceWeights& params, const TranslateOptions& options)
    : dev_(dev),
      params_(params),
      config_(params.config()),
      options_(options),
      max_graphs_(k_max_graphs) {
  options_.validate();
}

Translator::~Translator() = default;

uint32_t Translator::max_output(uint32_t source_tokens) const {
  const double m = std::floor(double(options_.max_len_a) * source_tokens) + options_.max_len_b;
  return uint32_t(std::clamp<double>(m, 1.0, double(config_.max_len)));
}

DecodeGraph& Translator::graph(const DecodeShape& shape) {
  ++use_clock_;
  auto it = graphs_.find(shape);
  if (it != graphs_.end()) {
    it->second.used = use_clock_;
    return *it->second.graph;
  }
  // The least recently used shape makes room: a service's mix of batch sizes and lengths keeps
  // its common shapes instead of recording them all again. Only called between batches, so no
  // graph dropped here has work in flight.
  limit_graphs(max_graphs_ - 1);
  auto& cached = graphs_[shape];
  cached.graph = std::make_unique<DecodeGraph>(dev_, params_, shape, false, options_.timed);
  cached.used = use_clock_;
  return *cached.graph;
}

uint32_t Translator::source_tokens(const std::vector<int32_t>& pieces) const {
  return std::min<uint32_t>(uint32_t(pieces.size()), uint32_t(config_.max_len) - 1) + 1;
}

DecodeGraph& Translator::submit_batch(std::span<const std::vector<int32_t>* const> rows,
                                      uint32_t batch, std::vector<uint32_t>& max_out,
                                      uint32_t min_src_len) {
  const uint32_t max_len = uint32_t(config_.max_len);
  const uint32_t n = uint32_t(rows.size());
  if (n == 0 || n > batch)
    throw Error("translate: a batch of " + std::to_string(n) + " in " + std::to_string(batch) +
                " rows");
  uint32_t longest = 0, longest_out = 0;
  max_out.assign(n, 0);
  for (uint32_t b = 0; b < n; ++b) {
    const uint32_t len = source_tokens(*rows[b]);
    longest = std::max(longest, len);
    max_out[b] = max_output(len);
    longest_out = std::max(longest_out, max_out[b]);
    stats_.source_tokens += len;
  }
  if (min_src_len > 0) {
    longest = std::max(longest, std::min(min_src_len, max_len));
    longest_out = std::max(longest_out, max_output(longest));
  }
  DecodeShape shape;
  shape.batch = batch;
  shape.beam = options_.beam;
  shape.src_len = round_up(longest, k_length_bucket, max_len);
  shape.max_out = round_up(longest_out, k_length_bucket, max_len);
  shape.candidates = DecodeShape::candidates_for(shape.beam, uint32_t(config_.vocab_size));
  DecodeGraph& g = graph(shape);
  std::vector<const std::vector<int32_t>*> slots(rows.begin(), rows.end());
  slots.resize(batch, nullptr);
  submit_encode(g, slots);
  return g;
}

namespace {

// A source row of the batch: pieces (already cut to fit), EOS, padding; returns its length.
int32_t fill_source_row(std::span<int32_t> row, const std::vector<int32_t>& pieces, uint32_t len,
                        const ModelConfig& config) {
  if (len > row.size())
    throw Error("translate: a source of " + std::to_string(len) + " tokens in a batch of " +
                std::to_string(row.size()));
  std::fill(row.begin(), row.end(), config.pad_id);
  std::copy_n(pieces.begin(), len - 1, row.begin());
  row[len - 1] = config.eos_id;
  return int32_t(len);
}

}  // namespace

void Translator::submit_encode(DecodeGraph& g, std::span<const std::vector<int32_t>* const> slots) {
  const DecodeShape& shape = g.shape();
  if (slots.size() != shape.batch)
    throw Error("translate: " + std::to_string(slots.size()) + " slots for a batch of " +
                std::to_string(shape.batch));
  std::vector<int32_t> src(size_t{shape.batch} * shape.src_len, config_.pad_id);
  std::vector<int32_t> lens(shape.batch, 1);
  for (uint32_t b = 0; b < shape.batch; ++b) {
    std::span<int32_t> row(src.data() + size_t{b} * shape.src_len, shape.src_len);
    if (slots[b] == nullptr)  // padding sentence: EOS only, not searched
      row[0] = config_.eos_id;
    else
      lens[b] = fill_source_row(row, *slots[b], source_tokens(*slots[b]), config_);
  }
  g.submit_encode(src, lens);
}

void Translator::submit_encode_slot(DecodeGraph& g, uint32_t slot,
                                    const std::vector<int32_t>& pieces) {
  std::vector<int32_t> row(g.shape().src_len);
  const int32_t len = fill_source_row(row, pieces, source_tokens(pieces), config_);
  g.submit_encode_slot(slot, row, len);
}

std::unique_ptr<Search> Translator::make_sentence_search(const DecodeShape& shape,
                                                         uint32_t max_out) const {
  DecodeShape one = shape;
  one.batch = 1;
  const uint32_t lengths[] = {max_out};
  return options_.beam == 1
             ? make_greedy_search(one, config_, lengths, options_.alpha)
             : make_beam_search(one, config_, lengths, {options_.alpha, options_.nbest});
}

std::unique_ptr<Search> Translator::make_search(const DecodeGraph& graph,
                                                std::span<const uint32_t> max_out) const {
  return options_.beam == 1
             ? make_greedy_search(graph.shape(), config_, max_out, options_.alpha)
             : make_beam_search(graph.shape(), config_, max_out, {options_.alpha, options_.nbest});
}

void Translator::limit_graphs(size_t n) {
  while (graphs_.size() > n)
    graphs_.erase(std::min_element(
        graphs_.begin(), graphs_.end(),
        [](const auto& a, const auto& b) { return a.second.used < b.second.used; }));
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
  for (const auto& [shape, g] : graphs_) n += g.graph->bytes();
  return n;
}

}  // namespace vkf::model::decode
