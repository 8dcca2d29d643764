#include "model/api/translator.h"

#include "engine/error.h"
#include "model/api/translator_impl.h"

namespace vkf {

void TranslatorOptions::validate() const {
  decode_options(*this).validate();
  tuning.validate();
}

struct TranslationSteps::Impl {
  Impl(model::decode::Translator& translator, const model::Tokenizer& tok,
       model::decode::PreparedLines p)
      : tokenizer(tok), prepared(std::move(p)), job(translator.start(prepared.sources)) {}
  const model::Tokenizer& tokenizer;
  model::decode::PreparedLines prepared;
  model::decode::TranslationJob job;
};

Translator::Translator(Device& device, const std::string& model, const TranslatorOptions& options)
    : impl_((options.validate(), std::make_unique<Impl>(device, model, options))) {}

Translator::~Translator() = default;

std::vector<Translation> Translator::translate(const std::vector<std::string>& lines) {
  return model::decode::translate_lines(impl_->translator, impl_->model.tokenizer, lines);
}

TranslationSteps Translator::start(const std::vector<std::string>& lines) {
  auto prepared = model::decode::prepare_lines(impl_->translator, impl_->model.tokenizer, lines);
  return TranslationSteps(std::make_unique<TranslationSteps::Impl>(
      impl_->translator, impl_->model.tokenizer, std::move(prepared)));
}

Device& Translator::device() const {
  return impl_->device;
}
const std::string& Translator::checkpoint() const {
  return impl_->model.path;
}
const std::string& Translator::tuning() const {
  return impl_->tuning;
}
uint64_t Translator::weight_bytes() const {
  return impl_->weights.bytes();
}
uint64_t Translator::cache_bytes() const {
  return impl_->translator.cache_bytes();
}

TranslationSteps::TranslationSteps(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TranslationSteps::TranslationSteps(TranslationSteps&&) noexcept = default;
TranslationSteps::~TranslationSteps() = default;

bool TranslationSteps::done() const {
  return impl_->job.done();
}
bool TranslationSteps::step() {
  return impl_->job.step();
}
bool TranslationSteps::poll() {
  return impl_->job.poll();
}
bool TranslationSteps::run_for(std::chrono::duration<double> budget) {
  return impl_->job.run_for(budget);
}
uint64_t TranslationSteps::sentences() const {
  return impl_->job.sentences();
}
StepReport TranslationSteps::take_report() {
  return impl_->job.take_report();
}
std::vector<Translation> TranslationSteps::results() {
  auto found = impl_->job.take_results();
  return model::decode::finish_lines(std::move(impl_->prepared), impl_->tokenizer, found);
}

}  // namespace vkf
