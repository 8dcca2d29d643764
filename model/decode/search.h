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
#include <memory>
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

// A search over one encoded batch as a state machine the caller drives, one decoder step at a
// time: step the graph at t() with tokens() and origin(), then advance() with its outputs,
// until done(). beam_search() and greedy_search() below are that loop, run to the end;
// model/decode/translation_job.h drives it across a host's frames.
class Search {
 public:
  virtual ~Search() = default;
  bool done() const { return active_ == 0; }
  uint32_t t() const { return t_; }  // the position of the next decoder step
  std::span<const int32_t> tokens() const { return tokens_; }
  std::span<const int32_t> origin() const { return origin_; }  // empty: no reordering
  // Takes the outputs of the step at t(): [rows, candidates] log-probabilities and token ids.
  virtual void advance(std::span<const float> logp, std::span<const uint32_t> token) = 0;
  // Per searched sentence, up to nbest hypotheses, best score first (once done()).
  virtual std::vector<std::vector<Hypothesis>> take_results() = 0;

 protected:
  uint32_t t_ = 0;
  uint32_t active_ = 0;
  std::vector<int32_t> tokens_, origin_;
};

// max_out[b] (<= shape.max_out) is sentence b's maximum output length including EOS; sentences
// at b >= max_out.size() are padding and not searched. Pad and BOS are never generated.
// Throws vkf::Error for lengths or nbest out of range.
std::unique_ptr<Search> make_beam_search(const DecodeShape& shape, const ModelConfig& config,
                                         std::span<const uint32_t> max_out,
                                         const SearchParams& params);
// Beam 1 without the bookkeeping: the arg-max token each step until EOS or the maximum length.
// Needs a shape with beam 1.
std::unique_ptr<Search> make_greedy_search(const DecodeShape& shape, const ModelConfig& config,
                                           std::span<const uint32_t> max_out, float alpha);

// The graph must have been encoded. Returns, per searched sentence, up to nbest hypotheses,
// best score first.
std::vector<std::vector<Hypothesis>> beam_search(DecodeGraph& graph, const ModelConfig& config,
                                                 std::span<const uint32_t> max_out,
                                                 const SearchParams& params);
std::vector<Hypothesis> greedy_search(DecodeGraph& graph, const ModelConfig& config,
                                      std::span<const uint32_t> max_out, float alpha);

}  // namespace vkf::model::decode
