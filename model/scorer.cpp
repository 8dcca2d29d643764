#include "model/scorer.h"

#include <cmath>
#include <limits>

#include "engine/error.h"
#include "engine/step_scalars.h"
#include "model/data/batcher.h"
#include "model/data/utf8.h"
#include "model/train_graph.h"

namespace vkf::model {

struct PairScorer::Pending {
  std::vector<ScoredPair> out;
  ExampleStore store;
  std::vector<int32_t> src, tgt;
};

PairScorer::PairScorer(Device& dev, const DeviceWeights& weights, const Tokenizer& tokenizer,
                       const ScoreOptions& options)
    : dev_(dev),
      weights_(weights),
      tokenizer_(tokenizer),
      options_(options),
      scalars_(dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host)),
      pool_(std::make_shared<ActivationPool>(dev)) {
  if (options.max_tokens <= 0) throw Error("score: max tokens must be positive");
  *reinterpret_cast<StepScalars*>(scalars_.mapped()) = StepScalars{};
}

PairScorer::~PairScorer() = default;

void PairScorer::add(Pending& p, std::string_view source, std::string_view target, bool well_formed,
                     int64_t line, bool too_long) {
  const ModelConfig& c = weights_.config();
  ScoredPair& s = p.out.emplace_back();
  s.logprob = std::numeric_limits<double>::quiet_NaN();
  if (too_long) {
    s.error =
        "longer than " + std::to_string(options_.max_line_bytes) + " bytes (--max-line-bytes)";
  } else if (!well_formed) {
    s.error = "not a TSV pair (source<TAB>target)";
  } else if (!is_valid_utf8(source) || !is_valid_utf8(target)) {
    s.error = "invalid UTF-8";
  } else {
    p.src = tokenizer_.encode(source);
    p.tgt = tokenizer_.encode(target);
    if (int(p.src.size()) + 1 > c.max_len || int(p.tgt.size()) + 1 > c.max_len)
      s.error = "longer than the model's " + std::to_string(c.max_len) + " positions";
    else
      p.store.add(p.src, p.tgt, line);
  }
}

std::vector<ScoredPair> PairScorer::score(const std::vector<std::string>& sources,
                                          const std::vector<std::string>& targets) {
  if (sources.size() != targets.size())
    throw Error("score: " + std::to_string(sources.size()) + " sources but " +
                std::to_string(targets.size()) + " targets");
  Pending p;
  for (size_t i = 0; i < sources.size(); ++i)
    add(p, sources[i], targets[i], true, int64_t(i) + 1, false);
  return run(p);
}

std::vector<ScoredPair> PairScorer::score(const CorpusFiles& files) {
  Pending p;
  ParallelTextReader reader(files, options_.max_line_bytes);
  RawPair pair;
  while (reader.next(pair))
    add(p, pair.source, pair.target, pair.well_formed, pair.line, pair.too_long);
  return run(p);
}

std::vector<ScoredPair> PairScorer::run(Pending& p) {
  if (p.store.empty()) return std::move(p.out);
  const ModelConfig& c = weights_.config();
  BatcherOptions bo;
  bo.shuffle = false;
  bo.max_len = c.max_len;
  bo.max_tokens = std::max<int64_t>(options_.max_tokens, c.max_len);
  Batcher batcher(p.store, tokenizer_.ids(), bo);
  EpochPlan plan = batcher.plan(0);
  for (size_t i = 0; i < plan.size(); ++i) {
    Batch b = batcher.make_batch(plan, i);
    const BucketShape shape{uint32_t(b.batch_size), uint32_t(b.src_len), uint32_t(b.tgt_len)};
    auto& g = graphs_[{shape.batch, shape.src_len, shape.tgt_len}];
    if (!g)
      g = std::make_unique<TrainGraph>(
          dev_, weights_, shape, scalars_.ref(),
          GraphOptions{.backward = false, .dropout = false, .profile = false, .pool = pool_});
    g->set_batch({b.src, b.tgt_in, b.tgt_out, b.src_lengths, b.tgt_lengths});
    StepResult r = g->run();
    for (int row = 0; row < b.batch_size; ++row) {
      ScoredPair& s = p.out[size_t(p.store.line(b.examples[size_t(row)]) - 1)];
      const double lp = r.row_logprob[size_t(row)];
      if (std::isfinite(lp)) {
        s.logprob = lp;
        s.tokens = b.tgt_lengths[size_t(row)];
      } else {
        // docs/design.md promises a number a line; a NaN or -inf is reported like an unscorable
        // pair.
        s.error = "the model gave a log-probability of " + std::to_string(lp);
      }
    }
  }
  return std::move(p.out);
}

std::vector<ScoredPair> score_corpus(Device& dev, const LoadedModel& model,
                                     const CorpusFiles& files, const ScoreOptions& options) {
  DeviceWeights weights(dev, model.checkpoint.config, 0,
                        resolve_precision(options.precision, dev.info()));
  weights.upload_checked(model.checkpoint.params, model.path);
  PairScorer scorer(dev, weights, model.tokenizer, options);
  return scorer.score(files);
}

}  // namespace vkf::model
