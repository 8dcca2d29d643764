#include "model/scorer.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "engine/error.h"
#include "engine/step_scalars.h"
#include "model/data/batcher.h"
#include "model/data/utf8.h"
#include "model/device_params.h"
#include "model/train_graph.h"

namespace vkf::model {

std::vector<ScoredPair> score_corpus(Device& dev, const LoadedModel& model,
                                     const CorpusFiles& files, const ScoreOptions& options) {
  const ModelConfig& c = model.checkpoint.config;
  const Tokenizer& tok = model.tokenizer;
  std::vector<ScoredPair> out;
  ExampleStore store;
  ParallelTextReader reader(files, options.max_line_bytes);
  RawPair pair;
  std::vector<int32_t> src, tgt;
  while (reader.next(pair)) {
    ScoredPair& s = out.emplace_back();
    s.logprob = std::numeric_limits<double>::quiet_NaN();
    if (pair.too_long) {
      s.error =
          "longer than " + std::to_string(options.max_line_bytes) + " bytes (--max-line-bytes)";
    } else if (!pair.well_formed) {
      s.error = "not a TSV pair (source<TAB>target)";
    } else if (!is_valid_utf8(pair.source) || !is_valid_utf8(pair.target)) {
      s.error = "invalid UTF-8";
    } else {
      src = tok.encode(pair.source);
      tgt = tok.encode(pair.target);
      if (int(src.size()) + 1 > c.max_len || int(tgt.size()) + 1 > c.max_len)
        s.error = "longer than the model's " + std::to_string(c.max_len) + " positions";
      else
        store.add(src, tgt, pair.line);
    }
  }
  if (store.empty()) return out;

  BatcherOptions bo;
  bo.shuffle = false;
  bo.max_len = c.max_len;
  bo.max_tokens = std::max<int64_t>(options.max_tokens, c.max_len);
  Batcher batcher(store, tok.ids(), bo);
  DeviceParams params(dev, c);
  params.upload(model.checkpoint.params);
  if (!params.all_finite())
    throw Error(model.path +
                " holds NaN, Inf or absurdly large weights: a corrupt file or a "
                "diverged run; score an earlier checkpoint");
  Buffer scalars = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  *reinterpret_cast<StepScalars*>(scalars.mapped()) = StepScalars{};
  auto pool = std::make_shared<ActivationPool>(dev);
  std::map<BucketShape, std::unique_ptr<TrainGraph>> graphs;
  EpochPlan plan = batcher.plan(0);
  for (size_t i = 0; i < plan.size(); ++i) {
    Batch b = batcher.make_batch(plan, i);
    BucketShape shape{uint32_t(b.batch_size), uint32_t(b.src_len), uint32_t(b.tgt_len)};
    auto& g = graphs[shape];
    if (!g)
      g = std::make_unique<TrainGraph>(
          dev, params, shape, scalars.ref(),
          GraphOptions{.backward = false, .dropout = false, .profile = false, .pool = pool});
    g->set_batch({b.src, b.tgt_in, b.tgt_out, b.src_lengths, b.tgt_lengths});
    StepResult r = g->run();
    for (int row = 0; row < b.batch_size; ++row) {
      ScoredPair& s = out[size_t(store.line(b.examples[size_t(row)]) - 1)];
      const double lp = r.row_logprob[size_t(row)];
      if (std::isfinite(lp)) {
        s.logprob = lp;
        s.tokens = b.tgt_lengths[size_t(row)];
      } else {
        // design.md promises a number a line; a NaN or -inf is reported like an unscorable pair.
        s.error = "the model gave a log-probability of " + std::to_string(lp);
      }
    }
  }
  return out;
}

}  // namespace vkf::model
