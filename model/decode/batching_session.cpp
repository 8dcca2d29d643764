#include "model/decode/batching_session.h"

#include <algorithm>
#include <bit>

#include "engine/error.h"
#include "model/decode/translator.h"

namespace vkf::model::decode {

BatchingSession::BatchingSession(Translator& translator) : translator_(&translator) {
  if (translator.job_open_)
    throw Error("translate: this translator is already running a translation job");
  translator.job_open_ = true;
  // A service's batches come in every power-of-two row count and source-length bucket; with
  // translate()'s 4 recorded shapes they were recorded again batch after batch (on lavapipe a
  // recording cost more than the batch). The extra shapes are mostly small ones.
  translator.max_graphs_ = k_session_graphs;
}

BatchingSession::~BatchingSession() {
  translator_->max_graphs_ = k_max_graphs;
  translator_->limit_graphs(k_max_graphs);
  translator_->job_open_ = false;
}

BatchingSession::Id BatchingSession::submit(std::vector<std::vector<int32_t>> sources,
                                            uint32_t max_output) {
  const Id id = next_id_++;
  Request r;
  r.max_output = max_output;
  r.results.resize(sources.size());
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty()) {
      waiting_.push_back({id, i});
      ++r.remaining;
    }
  r.sources = std::move(sources);
  if (r.remaining == 0) {
    finished_.push_back({id, std::move(r.results)});
    return id;
  }
  requests_.emplace(id, std::move(r));
  return id;
}

bool BatchingSession::cancel(Id id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  std::erase_if(waiting_, [id](const Sentence& s) { return s.id == id; });
  // Its running sentences' rows become padding: nothing reads them, and the next step's
  // newcomers may take the slots.
  for (auto& slot : slots_)
    if (slot && slot->sentence.id == id) slot.reset();
  requests_.erase(it);
  return true;
}

uint32_t BatchingSession::running_sentences() const {
  return uint32_t(
      std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return bool(s); }));
}

const std::vector<int32_t>& BatchingSession::source(const Sentence& s) const {
  return requests_.at(s.id).sources[s.index];
}

uint32_t BatchingSession::output_limit(const Sentence& s, uint32_t limit) const {
  const uint32_t own = requests_.at(s.id).max_output;
  return own > 0 ? std::min(own, limit) : limit;
}

uint32_t BatchingSession::min_slots() const {
  const uint32_t set = translator_->options().session_min_slots;
  return set > 0 ? set : translator_->dev_.info().is_cpu() ? 1 : 4;
}

void BatchingSession::start_batch() {
  const uint32_t cap = translator_->options().batch_size;
  std::vector<Sentence> first;
  while (!waiting_.empty() && first.size() < cap) {
    first.push_back(waiting_.front());
    waiting_.pop_front();
  }
  // Slots a power of two (at most the batch size): a lone request does not pay for 32 rows, and
  // few shapes are recorded; at least the minimum, so that others can join it.
  const uint32_t n = uint32_t(first.size());
  const uint32_t slots = std::min(cap, std::bit_ceil(std::max(n, min_slots())));
  std::vector<const std::vector<int32_t>*> src(n);
  for (uint32_t b = 0; b < n; ++b) src[b] = &source(first[b]);
  std::vector<uint32_t> max_out;
  graph_ = &translator_->submit_batch(src, slots, max_out, k_min_session_source);
  graph_->wait();
  slots_.clear();
  slots_.resize(slots);
  for (uint32_t b = 0; b < n; ++b)
    slots_[b] = Running{first[b], translator_->make_sentence_search(
                                      graph_->shape(), output_limit(first[b], max_out[b]))};
  batch_sizes_.push_back(n);
}

bool BatchingSession::admit() {
  const DecodeShape& shape = graph_->shape();
  // More waiting than the free slots hold, in a batch narrower than the batch size: nobody
  // joins, so that it drains and a wider one opens (a batch that newcomers keep full never
  // ends, and would keep its width however many clients come).
  const size_t running = running_sentences(), free_slots = slots_.size() - running;
  if (waiting_.size() > free_slots && slots_.size() < translator_->options().batch_size)
    return false;
  // A batch four times wider than its lines (a burst's) on a CPU device, where every row costs
  // its arithmetic: nobody joins, so that it drains and a narrower one opens.
  if (translator_->dev_.info().is_cpu() && slots_.size() > min_slots() &&
      (running + waiting_.size()) * 4 <= slots_.size())
    return false;
  bool joined = false;
  for (uint32_t b = 0; b < slots_.size() && !waiting_.empty(); ++b) {
    if (slots_[b]) continue;
    const Sentence next = waiting_.front();
    const uint32_t len = translator_->source_tokens(source(next));
    const uint32_t max_out = translator_->max_output(len);  // the shape's, whatever the request's
    // The oldest that does not fit waits for the next batch, and no later one passes it.
    if (len > shape.src_len || max_out > shape.max_out) break;
    waiting_.pop_front();
    slots_[b] =
        Running{next, translator_->make_sentence_search(shape, output_limit(next, max_out))};
    // One sentence's encoder pass into its slot (submissions of one graph run in order).
    translator_->submit_encode_slot(*graph_, b, source(next));
    translator_->stats_.source_tokens += len;
    ++counts_.joined;
    joined = true;
  }
  if (joined) graph_->wait();
  return joined;
}

void BatchingSession::decode_step() {
  const DecodeShape& shape = graph_->shape();
  const uint32_t K = shape.beam, R = shape.rows(), C = shape.candidates;
  // Free slots' rows: an EOS at position 0, every step (their outputs are not read). The
  // vectors keep their capacity from step to step.
  std::vector<int32_t>&positions = step_positions_, &tokens = step_tokens_, &origin = step_origin_;
  positions.assign(R, 0);
  tokens.assign(R, translator_->config_.eos_id);
  origin.resize(R);
  for (uint32_t r = 0; r < R; ++r) origin[r] = int32_t(r);
  for (uint32_t b = 0; b < slots_.size(); ++b) {
    if (!slots_[b]) continue;
    const Search& s = *slots_[b]->search;
    const uint32_t row0 = b * K;
    for (uint32_t j = 0; j < K; ++j) {
      positions[row0 + j] = int32_t(s.t());
      tokens[row0 + j] = s.tokens()[j];
      if (!s.origin().empty()) origin[row0 + j] = int32_t(row0) + s.origin()[j];
    }
  }
  ++counts_.decoder_steps;
  counts_.step_sentences += running_sentences();
  graph_->submit_rows_step(positions, tokens, origin);
  graph_->wait();
  const auto logp = graph_->logp();
  const auto token = graph_->token();
  Translator& tr = *translator_;
  for (uint32_t b = 0; b < slots_.size(); ++b) {
    if (!slots_[b]) continue;
    Search& s = *slots_[b]->search;
    s.advance(logp.subspan(size_t{b} * K * C, size_t{K} * C),
              token.subspan(size_t{b} * K * C, size_t{K} * C));
    if (!s.done()) continue;
    auto found = s.take_results();
    if (!found[0].empty()) tr.stats_.output_tokens += found[0][0].length();
    ++tr.stats_.sentences;
    const Sentence done = slots_[b]->sentence;
    slots_[b].reset();
    finish_sentence(done, std::move(found[0]));
  }
}

void BatchingSession::finish_sentence(const Sentence& s, std::vector<Hypothesis> found) {
  auto it = requests_.find(s.id);
  if (it == requests_.end()) return;
  Request& r = it->second;
  r.results[s.index] = std::move(found);
  if (--r.remaining == 0) {
    finished_.push_back({s.id, std::move(r.results)});
    requests_.erase(it);
  }
}

void BatchingSession::close_batch() {
  slots_.clear();
  graph_ = nullptr;
}

bool BatchingSession::step() {
  // A batch with no line left closes, so that the next opens at the width of what waits.
  if (graph_ != nullptr && running_sentences() == 0) close_batch();
  if (graph_ != nullptr && admit()) return true;  // the joiners' encoder pass
  if (graph_ == nullptr) {
    if (waiting_.empty()) return false;
    start_batch();
    return true;
  }
  decode_step();
  return true;
}

std::vector<BatchingSession::Finished> BatchingSession::take_finished() {
  return std::exchange(finished_, {});
}

std::vector<uint32_t> BatchingSession::take_batch_sizes() {
  return std::exchange(batch_sizes_, {});
}

}  // namespace vkf::model::decode
