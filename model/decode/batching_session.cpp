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

BatchingSession::Id BatchingSession::submit(std::vector<std::vector<int32_t>> sources) {
  const Id id = next_id_++;
  Request r;
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
  if (it == requests_.end() || it->second.cancelled) return false;
  it->second.cancelled = true;
  std::erase_if(waiting_, [id](const Slot& s) { return s.id == id; });
  // Sentences in the running batch keep their rows until it ends (the request is erased then).
  const bool running =
      std::any_of(running_.begin(), running_.end(), [id](const Slot& s) { return s.id == id; });
  if (!running) requests_.erase(it);
  return true;
}

void BatchingSession::start_batch() {
  const uint32_t cap = translator_->options().batch_size;
  running_.clear();
  while (!waiting_.empty() && running_.size() < cap) {
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
  // Rows a power of two (at most the batch size): a lone request does not pay for 32 rows, and
  // few shapes are recorded.
  const uint32_t rows = std::min(cap, std::bit_ceil(uint32_t(running_.size())));
  std::vector<const std::vector<int32_t>*> src(running_.size());
  for (size_t b = 0; b < running_.size(); ++b)
    src[b] = &requests_.at(running_[b].id).sources[running_[b].sentence];
  graph_ = &translator_->submit_batch(src, rows, max_out_);
  search_.reset();
  open_ = true;
  batch_sizes_.push_back(uint32_t(running_.size()));
  collect();
}

void BatchingSession::collect() {
  graph_->wait();
  if (!search_)
    search_ = translator_->make_search(*graph_, max_out_);
  else
    search_->advance(graph_->logp(), graph_->token());
  if (search_->done()) finish_batch();
}

void BatchingSession::finish_sentence(const Slot& slot, std::vector<Hypothesis> found) {
  auto it = requests_.find(slot.id);
  if (it == requests_.end()) return;
  Request& r = it->second;
  r.results[slot.sentence] = std::move(found);
  if (--r.remaining == 0 && !r.cancelled) {
    finished_.push_back({slot.id, std::move(r.results)});
    requests_.erase(it);
  }
}

void BatchingSession::finish_batch() {
  auto found = search_->take_results();
  Translator& tr = *translator_;
  for (size_t b = 0; b < running_.size(); ++b) {
    if (!found[b].empty()) tr.stats_.output_tokens += found[b][0].length();
    finish_sentence(running_[b], std::move(found[b]));
  }
  tr.stats_.sentences += running_.size();
  close_batch();
}

void BatchingSession::close_batch() {
  // Cancelled requests whose last running sentences just left (cancel() took their waiting ones).
  for (const Slot& s : running_) {
    auto it = requests_.find(s.id);
    if (it != requests_.end() && it->second.cancelled) requests_.erase(it);
  }
  running_.clear();
  search_.reset();
  open_ = false;
}

bool BatchingSession::step() {
  if (!open_) {
    if (waiting_.empty()) return false;
    start_batch();
    return true;
  }
  const bool all_cancelled = std::all_of(running_.begin(), running_.end(), [&](const Slot& s) {
    auto it = requests_.find(s.id);
    return it == requests_.end() || it->second.cancelled;
  });
  if (all_cancelled) {  // nobody waits for this batch: stop it here
    close_batch();
    return true;
  }
  graph_->submit_step(search_->t(), search_->tokens(), search_->origin());
  collect();
  return true;
}

std::vector<BatchingSession::Finished> BatchingSession::take_finished() {
  return std::exchange(finished_, {});
}

std::vector<uint32_t> BatchingSession::take_batch_sizes() {
  return std::exchange(batch_sizes_, {});
}

}  // namespace vkf::model::decode
