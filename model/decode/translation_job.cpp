#include "model/decode/translation_job.h"

#include <algorithm>

#include "engine/error.h"
#include "model/decode/translator.h"

namespace vkf::model::decode {
namespace {

// Adds the time from construction to destruction to `ms`.
struct HostTimer {
  explicit HostTimer(double& ms) : ms_(ms), start_(std::chrono::steady_clock::now()) {}
  ~HostTimer() {
    ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
               .count();
  }
  double& ms_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

TranslationJob::TranslationJob(Translator& translator,
                               const std::vector<std::vector<int32_t>>& sources,
                               std::function<void(uint64_t)> progress)
    : translator_(&translator),
      sources_(sources),
      progress_(std::move(progress)),
      results_(sources.size()),
      sentences_(sources.size()) {
  for (size_t i = 0; i < sources_.size(); ++i)
    if (!sources_[i].empty()) order_.push_back(i);
  // Longest first: the first batch records the largest shape, later ones usually reuse it.
  std::stable_sort(order_.begin(), order_.end(),
                   [&](size_t a, size_t b) { return sources_[a].size() > sources_[b].size(); });
  batch_ = std::min<uint32_t>(translator.options_.batch_size,
                              uint32_t(std::max<size_t>(order_.size(), 1)));
  finished_ = sources_.size() - order_.size();
  report_.sentences = finished_;
  if (progress_ && finished_) progress_(finished_);
  translator.job_open_ = true;
  release_if_done();
}

void TranslationJob::release_if_done() {
  if (translator_ != nullptr && done()) {
    translator_->job_open_ = false;
    translator_ = nullptr;
  }
}

TranslationJob::TranslationJob(TranslationJob&& o) noexcept
    : translator_(std::exchange(o.translator_, nullptr)),
      sources_(std::move(o.sources_)),
      progress_(std::move(o.progress_)),
      results_(std::move(o.results_)),
      order_(std::move(o.order_)),
      sentences_(o.sentences_),
      finished_(o.finished_),
      batch_(o.batch_),
      begin_(o.begin_),
      n_(o.n_),
      graph_(o.graph_),
      search_(std::move(o.search_)),
      max_out_(std::move(o.max_out_)),
      in_flight_(std::exchange(o.in_flight_, false)),
      batch_open_(o.batch_open_),
      report_(o.report_) {}

TranslationJob::~TranslationJob() {
  if (translator_ == nullptr) return;
  // The device may still be reading the graph's inputs: let the unit in flight finish.
  if (in_flight_ && graph_ != nullptr) {
    try {
      graph_->wait();
    } catch (...) {
      // A lost device: nothing left to wait for.
    }
  }
  translator_->job_open_ = false;
}

bool TranslationJob::done() const {
  return begin_ >= order_.size() && !batch_open_ && !in_flight_;
}

void TranslationJob::start_batch() {
  const size_t end = std::min(order_.size(), begin_ + batch_);
  n_ = uint32_t(end - begin_);
  std::vector<const std::vector<int32_t>*> rows(n_);
  for (uint32_t b = 0; b < n_; ++b) rows[b] = &sources_[order_[begin_ + b]];
  graph_ = &translator_->submit_batch(rows, batch_, max_out_);
  batch_open_ = true;
}

void TranslationJob::finish_batch() {
  Translator& tr = *translator_;
  auto found = search_->take_results();
  for (uint32_t b = 0; b < n_; ++b) {
    if (!found[b].empty()) tr.stats_.output_tokens += found[b][0].length();
    results_[order_[begin_ + b]] = std::move(found[b]);
  }
  tr.stats_.sentences += n_;
  finished_ += n_;
  report_.sentences = finished_;
  search_.reset();
  batch_open_ = false;
  begin_ += n_;
  if (progress_) progress_(finished_);
}

void TranslationJob::submit_next() {
  if (!batch_open_) {
    if (begin_ >= order_.size()) return;
    start_batch();
  } else {
    graph_->submit_step(search_->t(), search_->tokens(), search_->origin());
  }
  in_flight_ = true;
}

void TranslationJob::collect() {
  graph_->wait();
  in_flight_ = false;
  report_.units++;
  report_.gpu_ms += graph_->last_gpu_milliseconds();
  if (!search_) {  // the encoder pass: the search starts at t = 0
    search_ = translator_->make_search(*graph_, max_out_);
  } else {
    search_->advance(graph_->logp(), graph_->token());
  }
  if (search_->done()) finish_batch();
}

bool TranslationJob::step() {
  HostTimer timer(report_.host_ms);
  if (!in_flight_) submit_next();
  if (in_flight_) collect();
  release_if_done();
  return !done();
}

bool TranslationJob::poll() {
  HostTimer timer(report_.host_ms);
  if (in_flight_) {
    if (!graph_->ready()) return false;
    collect();
  }
  if (!done()) submit_next();
  release_if_done();
  return done();
}

bool TranslationJob::run_for(std::chrono::duration<double> budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  do {
    step();
  } while (!done() && std::chrono::steady_clock::now() < until);
  return done();
}

StepReport TranslationJob::take_report() {
  StepReport r = report_;
  report_ = StepReport{};
  report_.sentences = finished_;
  return r;
}

std::vector<std::vector<Hypothesis>> TranslationJob::take_results() {
  if (!done()) throw Error("translate: results asked for before the translation job is done");
  return std::move(results_);
}

}  // namespace vkf::model::decode
