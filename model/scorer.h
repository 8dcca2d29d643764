#pragma once
// Teacher-forced scoring (docs/design.md, `vkf score`): for each sentence pair, the summed
// natural-log probability of the target, EOS included, with dropout off and no label smoothing.
// This is how results are compared with other implementations. Needs the weights only.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "engine/device.h"
#include "model/data/parallel_text.h"
#include "model/data/tokenizer.h"
#include "model/device_weights.h"
#include "model/loaded_model.h"

namespace vkf::model {

struct ScoreOptions {
  int64_t max_tokens = 4096;                           // per side per batch, padding included
  uint64_t max_line_bytes = k_default_max_line_bytes;  // longer lines are not scored
  // score_corpus's weights: fp32 by default, as scores are compared with other implementations.
  PrecisionChoice precision = PrecisionChoice::fp32;
};

struct ScoredPair {
  double logprob = 0;  // sum over target tokens of ln p(token), EOS included
  int64_t tokens = 0;  // target pieces + EOS
  std::string error;   // non-empty: the pair could not be scored (logprob is NaN)
};

class ActivationPool;
class TrainGraph;

// Scores pairs of text with weights already on the device (which must outlive it). Recorded
// forward graphs are kept per batch shape between calls.
class PairScorer {
 public:
  PairScorer(Device& dev, const DeviceWeights& weights, const Tokenizer& tokenizer,
             const ScoreOptions& options = {});
  ~PairScorer();

  // One entry per pair, in order. A bad pair (invalid UTF-8, longer than the model's positions)
  // gets an error message, never an exception; sources and targets of different counts throw.
  std::vector<ScoredPair> score(const std::vector<std::string>& sources,
                                const std::vector<std::string>& targets);
  // The same for line pairs of files; throws vkf::Error for missing files or files of different
  // lengths.
  std::vector<ScoredPair> score(const CorpusFiles& files);

 private:
  struct Pending;
  void add(Pending& p, std::string_view source, std::string_view target, bool well_formed,
           int64_t line, bool too_long);
  std::vector<ScoredPair> run(Pending& p);

  Device& dev_;
  const DeviceWeights& weights_;
  const Tokenizer& tokenizer_;
  ScoreOptions options_;
  Buffer scalars_;
  std::shared_ptr<ActivationPool> pool_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::unique_ptr<TrainGraph>> graphs_;
};

// One entry per input line pair, in input order. Never throws for a bad line (it gets an error
// message, as does a pair whose log-probability comes out NaN or infinite); throws vkf::Error
// for missing files, files of different lengths, and weights that are not all finite.
std::vector<ScoredPair> score_corpus(Device& dev, const LoadedModel& model,
                                     const CorpusFiles& files, const ScoreOptions& options = {});

}  // namespace vkf::model
