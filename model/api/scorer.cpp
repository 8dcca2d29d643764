#include "model/api/scorer.h"

#include "model/device_weights.h"
#include "model/loaded_model.h"

namespace vkf {

struct Scorer::Impl {
  Impl(Device& dev, const std::string& path, const ScorerOptions& options)
      : model(model::load_model(path, options.vocab)),
        weights(dev, model.checkpoint.config, 0,
                model::resolve_precision(options.precision, dev.info())) {
    weights.upload_checked(model.checkpoint.params, model.path);
    std::vector<float>().swap(model.checkpoint.params);
    scorer = std::make_unique<model::PairScorer>(dev, weights, model.tokenizer,
                                                 model::ScoreOptions{options.max_tokens});
  }
  model::LoadedModel model;
  model::DeviceWeights weights;
  std::unique_ptr<model::PairScorer> scorer;
};

Scorer::Scorer(Device& device, const std::string& model, const ScorerOptions& options)
    : impl_(std::make_unique<Impl>(device, model, options)) {}

Scorer::~Scorer() = default;

std::vector<ScoredPair> Scorer::score(const std::vector<std::string>& sources,
                                      const std::vector<std::string>& targets) {
  return impl_->scorer->score(sources, targets);
}

uint64_t Scorer::weight_bytes() const {
  return impl_->weights.bytes();
}

}  // namespace vkf
