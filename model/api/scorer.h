#pragma once
// vkf::Scorer: a trained checkpoint and its vocabulary on a device, scoring sentence pairs the
// way `vkf score` does (teacher forced, dropout off, no label smoothing: the summed natural-log
// probability of each target, EOS included). Weights only on the device; the device must outlive
// the scorer.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"
#include "model/scorer.h"

namespace vkf {

struct ScorerOptions {
  int64_t max_tokens = 4096;  // tokens a side per batch, padding included
  std::string vocab;          // SentencePiece model; "" = the one the checkpoint names, beside it
  // fp32 by default: scores are what other implementations are compared with (docs/design.md).
  model::PrecisionChoice precision = model::PrecisionChoice::fp32;
};

// logprob, tokens, and an error message (logprob NaN) for a pair that could not be scored.
using ScoredPair = model::ScoredPair;

class Scorer {
 public:
  Scorer(Device& device, const std::string& model, const ScorerOptions& options = {});
  ~Scorer();
  Scorer(const Scorer&) = delete;
  Scorer& operator=(const Scorer&) = delete;

  // One result per pair, in order; sources and targets must have the same count.
  std::vector<ScoredPair> score(const std::vector<std::string>& sources,
                                const std::vector<std::string>& targets);
  uint64_t weight_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
