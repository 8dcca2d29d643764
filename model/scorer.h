#pragma once
// Teacher-forced scoring (shared/design.md, `vkf score`): for each sentence pair, the summed
// natural-log probability of the target, EOS included, with dropout off and no label smoothing.
// This is how results are compared with other implementations.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/device.h"
#include "model/data/parallel_text.h"
#include "model/loaded_model.h"

namespace vkf::model {

struct ScoreOptions {
  int64_t max_tokens = 4096;                           // per side per batch, padding included
  uint64_t max_line_bytes = k_default_max_line_bytes;  // longer lines are not scored
};

struct ScoredPair {
  double logprob = 0;  // sum over target tokens of ln p(token), EOS included
  int64_t tokens = 0;  // target pieces + EOS
  std::string error;   // non-empty: the pair could not be scored (logprob is NaN)
};

// One entry per input line pair, in input order. Never throws for a bad line (it gets an error
// message, as does a pair whose log-probability comes out NaN or infinite); throws vkf::Error
// for missing files, files of different lengths, and weights that are not all finite.
std::vector<ScoredPair> score_corpus(Device& dev, const LoadedModel& model,
                                     const CorpusFiles& files, const ScoreOptions& options = {});

}  // namespace vkf::model
