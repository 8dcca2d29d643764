#include "apps/serve/service.h"

#include <algorithm>

#include "engine/error.h"

namespace vkf::serve {

bool Ticket::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex);
  return cv.wait_for(lock, timeout, [&] { return done; });
}

TranslationService::TranslationService(Device& device, const ServiceOptions& options)
    : device_(device),
      options_(options),
      translator_(std::make_unique<Translator>(device, options.model, options.translator)),
      tuning_(translator_->tuning()) {
  options_.translator.tuning.use.clear();  // a reload keeps the device's tuning
  session_.emplace(translator_->open_session());
  checkpoint_ = translator_->checkpoint();
  worker_ = std::thread([this] { run(); });
}

TranslationService::~TranslationService() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::shared_ptr<Ticket> TranslationService::submit(std::vector<std::string> lines,
                                                   uint32_t max_length) {
  auto t = std::make_shared<Ticket>();
  {
    std::lock_guard lock(mutex_);
    if (draining_ || stopping_) return nullptr;
    // One request larger than the whole queue is still taken when the queue is empty.
    if (pending_lines_ > 0 && pending_lines_ + lines.size() > options_.queue_limit) return nullptr;
    pending_lines_ += lines.size();
    t->lines = std::move(lines);
    t->max_length = max_length;
    inbox_.push_back(t);
  }
  cv_.notify_all();
  return t;
}

void TranslationService::cancel(const std::shared_ptr<Ticket>& ticket) {
  {
    std::lock_guard lock(mutex_);
    {
      std::lock_guard tl(ticket->mutex);
      if (ticket->done || ticket->cancelled) return;
      ticket->cancelled = true;
    }
    auto it = std::find(inbox_.begin(), inbox_.end(), ticket);
    if (it != inbox_.end()) {  // not in the session yet
      inbox_.erase(it);
      pending_lines_ -= ticket->lines.size();
      if (pending_lines_ == 0) idle_cv_.notify_all();
      return;
    }
    cancels_.push_back(ticket);
  }
  cv_.notify_all();
}

std::string TranslationService::reload(const std::string& path) {
  Reload r;
  r.path = path.empty() ? options_.model : path;
  std::unique_lock lock(mutex_);
  if (stopping_) return "the service is stopping";
  reloads_.push_back(&r);
  cv_.notify_all();
  idle_cv_.wait(lock, [&] { return r.done; });
  return r.error;
}

void TranslationService::drain() {
  std::unique_lock lock(mutex_);
  draining_ = true;
  idle_cv_.wait(lock, [&] { return pending_lines_ == 0 && inbox_.empty(); });
}

ServiceStats TranslationService::stats() const {
  std::lock_guard lock(mutex_);
  ServiceStats s = stats_;
  for (const auto& t : inbox_) s.waiting_lines += t->lines.size();
  return s;
}

std::string TranslationService::checkpoint() const {
  std::lock_guard lock(mutex_);
  return checkpoint_;
}

bool TranslationService::healthy() const {
  std::lock_guard lock(mutex_);
  return healthy_;
}

void TranslationService::do_reload(Reload& r) {
  try {
    // Loaded beside the old model, so a checkpoint that fails leaves it serving.
    auto fresh = std::make_unique<Translator>(device_, r.path, options_.translator);
    token_base_ += session_->output_tokens();  // the new translator counts from 0
    const BatchSession::Counts c = session_->counts();
    counts_base_.joined_lines += c.joined_lines;
    counts_base_.decoder_steps += c.decoder_steps;
    counts_base_.step_lines += c.step_lines;
    session_.reset();
    translator_ = std::move(fresh);
    session_.emplace(translator_->open_session());
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  std::lock_guard lock(mutex_);
  if (r.error.empty()) {
    checkpoint_ = translator_->checkpoint();
    ++stats_.reloads_ok;
  } else {
    ++stats_.reloads_failed;
  }
}

void TranslationService::finish(const std::vector<BatchSession::Finished>& finished) {
  size_t answered = 0;
  for (const auto& f : finished) {
    auto it = open_.find(f.id);
    if (it == open_.end()) continue;
    const auto ticket = it->second;
    open_.erase(it);
    {
      std::lock_guard tl(ticket->mutex);
      for (const auto& tr : f.translations)
        ticket->texts.push_back(tr.nbest.empty() ? std::string() : tr.nbest[0].text);
      ticket->done = true;
    }
    ticket->cv.notify_all();
    answered += ticket->lines.size();
  }
  if (answered == 0) return;
  std::lock_guard lock(mutex_);
  pending_lines_ -= answered;
  if (pending_lines_ == 0) idle_cv_.notify_all();
}

void TranslationService::fail_all(const std::string& why) {
  size_t answered = 0;
  for (auto& [id, ticket] : open_) {
    {
      std::lock_guard tl(ticket->mutex);
      ticket->error = why;
      ticket->done = true;
    }
    ticket->cv.notify_all();
    answered += ticket->lines.size();
  }
  open_.clear();
  std::lock_guard lock(mutex_);
  healthy_ = false;
  pending_lines_ -= std::min(pending_lines_, answered);
  if (pending_lines_ == 0) idle_cv_.notify_all();
}

void TranslationService::run() {
  bool waited = false;  // the batch about to start has had its window
  for (;;) {
    std::vector<std::shared_ptr<Ticket>> arrived, cancelled;
    {
      std::unique_lock lock(mutex_);
      const bool idle = session_->idle() && open_.empty();
      if (!reloads_.empty() && idle) {  // no request in the old model's hands
        Reload* r = reloads_.front();
        reloads_.pop_front();
        lock.unlock();
        do_reload(*r);
        lock.lock();
        r->done = true;
        idle_cv_.notify_all();
        continue;
      }
      // While a reload waits, new requests stay in the inbox for the new model.
      if (reloads_.empty()) arrived.assign(inbox_.begin(), inbox_.end());
      if (reloads_.empty()) inbox_.clear();
      cancelled.swap(cancels_);
      if (arrived.empty() && cancelled.empty() && idle) {
        if (stopping_ && inbox_.empty()) return;
        cv_.wait(lock);
        continue;
      }
    }
    try {
      for (auto& t : arrived) open_[session_->submit(t->lines, t->max_length)] = t;
      for (auto& t : cancelled)
        for (auto it = open_.begin(); it != open_.end(); ++it)
          if (it->second == t) {
            session_->cancel(it->first);
            {
              std::lock_guard lock(mutex_);
              pending_lines_ -= t->lines.size();
              if (pending_lines_ == 0) idle_cv_.notify_all();
            }
            open_.erase(it);
            break;
          }
      // A batch about to start with room to spare waits a moment for more lines: clients just
      // answered send their next request within a millisecond or two, and without the wait two
      // clients would take turns in batches of one instead of sharing one.
      const size_t room = options_.translator.batch_size;
      if (!waited && options_.batch_window.count() > 0 && session_->running_lines() == 0 &&
          session_->waiting_lines() > 0 && session_->waiting_lines() < room) {
        waited = true;
        std::unique_lock lock(mutex_);
        cv_.wait_for(lock, options_.batch_window, [&] {
          size_t lines = session_->waiting_lines();
          for (const auto& t : inbox_) lines += t->lines.size();
          return lines >= room || stopping_ || !reloads_.empty();
        });
        continue;
      }
      waited = false;
      const auto start = std::chrono::steady_clock::now();
      session_->step();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      finish(session_->take_finished());
      std::lock_guard lock(mutex_);
      stats_.busy_seconds += s;
      stats_.output_tokens = token_base_ + session_->output_tokens();
      stats_.waiting_lines = session_->waiting_lines();
      stats_.running_lines = session_->running_lines();
      const BatchSession::Counts c = session_->counts();
      stats_.counts = {counts_base_.joined_lines + c.joined_lines,
                       counts_base_.decoder_steps + c.decoder_steps,
                       counts_base_.step_lines + c.step_lines};
      for (uint32_t n : session_->take_batch_sizes()) ++stats_.batch_sizes[n];
    } catch (const std::exception& e) {
      // A lost device or a failed allocation: every open request gets the error.
      fail_all(std::string("translation failed: ") + e.what());
    }
  }
}

}  // namespace vkf::serve
