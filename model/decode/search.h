#pragma once
// Greedy and beam search over one encoded batch (host side: the device computes each step's
// top-k, the host keeps the hypotheses). Beam search as Marian and CTranslate2 do it: each step
// extends every live hypothesis by its best next tokens and keeps the best `beam` by summed
// log-probability; a hypothesis that emits EOS is finished and leaves the beam (which shrinks by
// one, so beam 1 is greedy); finished ones are ranked by the length-normalised score
//   score = log p(y) / lp(|y|),  lp(n) = ((5 + n) / 6)^alpha  (n counts EOS; Wu et al. 2016).
// A sentence stops when `beam` hypotheses have finished, when it reaches its maximum length
// (the live hypotheses are then finished without EOS), or as soon as no live hypothesis can
// beat the n-th best finished one: log-probabilities only fall as a hypothesis grows, so
// log p / lp(max length) bounds every score it can reach.
#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/decode/graph.h"

namespace vkf::model::decode {

struct Hypothesis {
  std::vector<int32_t> tokens;  // output pieces, without EOS
  double logprob = 0;           // summed log p of the tokens (and of EOS when `eos`)
  double score = 0;             // logprob / lp(length)
  bool eos = true;              // false: stopped at the maximum length
  uint32_t length() const { return uint32_t(tokens.size()) + (eos ? 1u : 0u); }
};

double length_penalty(uint32_t length, float alpha);

struct SearchParams {
  float alpha = 0.6f;
  uint32_t nbest = 1;  // hypotheses returned per sentence, <= beam
};

// The graph must have been encoded. max_out[b] (<= shape.max_out) is sentence b's maximum
// output length including EOS; sentences at b >= max_out.size() are padding and not searched.
// Returns, per searched sentence, up to nbest hypotheses, best score first. Pad and BOS are
// never generated.
std::vector<std::vector<Hypothesis>> beam_search(DecodeGraph& graph, const ModelConfig& config,
                                                 std::span<const uint32_t> max_out,
                                                 const SearchParams& params);

// Beam 1 without the bookkeeping: the arg-max token each step until EOS or the maximum length.
// Needs a graph with beam 1.
std::vector<Hypothesis> greedy_search(DecodeGraph& graph, const ModelConfig& config,
                                      std::span<const uint32_t> max_out, float alpha);

}  // namespace vkf::model::decode
