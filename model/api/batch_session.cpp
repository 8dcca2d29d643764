// vkf::BatchSession: text in and out around model/decode/batching_session.h (the lines of each
// request are checked and encoded on submit, decoded back to text when the request finishes).
#include <map>

#include "model/api/translator_impl.h"
#include "model/decode/batching_session.h"
#include "model/decode/text.h"

namespace vkf {

struct BatchSession::Impl {
  Impl(model::decode::Translator& t, const model::Tokenizer& tok)
      : translator(t), tokenizer(tok), session(t) {}
  model::decode::Translator& translator;
  const model::Tokenizer& tokenizer;
  model::decode::BatchingSession session;
  std::map<Id, model::decode::PreparedLines> prepared;  // per open request
};

BatchSession Translator::open_session() {
  return BatchSession(
      std::make_unique<BatchSession::Impl>(impl_->translator, impl_->model.tokenizer));
}

BatchSession::BatchSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchSession::BatchSession(BatchSession&&) noexcept = default;
BatchSession::~BatchSession() = default;

BatchSession::Id BatchSession::submit(const std::vector<std::string>& lines, uint32_t max_length) {
  auto p = model::decode::prepare_lines(impl_->translator, impl_->tokenizer, lines);
  // finish_lines needs only the flags in p.out: the pieces move to the session.
  const Id id = impl_->session.submit(std::move(p.sources), max_length);
  impl_->prepared.emplace(id, std::move(p));
  return id;
}

bool BatchSession::cancel(Id id) {
  const bool known = impl_->session.cancel(id);
  if (known) impl_->prepared.erase(id);
  return known;
}

bool BatchSession::step() {
  return impl_->session.step();
}

bool BatchSession::idle() const {
  return impl_->session.idle();
}

std::vector<BatchSession::Finished> BatchSession::take_finished() {
  std::vector<Finished> out;
  for (auto& f : impl_->session.take_finished()) {
    auto it = impl_->prepared.find(f.id);
    if (it == impl_->prepared.end()) continue;  // cancelled
    out.push_back(
        {f.id, model::decode::finish_lines(std::move(it->second), impl_->tokenizer, f.results)});
    impl_->prepared.erase(it);
  }
  return out;
}

size_t BatchSession::waiting_lines() const {
  return impl_->session.waiting_sentences();
}
uint32_t BatchSession::running_lines() const {
  return impl_->session.running_sentences();
}
std::vector<uint32_t> BatchSession::take_batch_sizes() {
  return impl_->session.take_batch_sizes();
}
BatchSession::Counts BatchSession::counts() const {
  const auto& c = impl_->session.counts();
  return {c.joined, c.decoder_steps, c.step_sentences};
}
uint64_t BatchSession::output_tokens() const {
  return impl_->translator.stats().output_tokens;
}

}  // namespace vkf
