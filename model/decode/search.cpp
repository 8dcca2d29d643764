#include "model/decode/search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/error.h"

namespace vkf::model::decode {

double length_penalty(uint32_t length, float alpha) {
  return std::pow((5.0 + double(length)) / 6.0, double(alpha));
}

namespace {

struct Live {
  std::vector<int32_t> tokens;
  double logprob = 0;
  bool alive = false;
};

struct Candidate {
  double logprob;
  uint32_t row, rank;
  int32_t token;
};

bool generable(int32_t token, const ModelConfig& c) {
  return token != c.pad_id && token != c.bos_id && token >= 0 && token < c.vocab_size;
}

Hypothesis finish(std::vector<int32_t> tokens, double logprob, bool eos, float alpha) {
  Hypothesis h;
  h.tokens = std::move(tokens);
  h.logprob = logprob;
  h.eos = eos;
  h.score = logprob / length_penalty(h.length(), alpha);
  return h;
}

bool better(const Hypothesis& a, const Hypothesis& b) {
  return a.score > b.score;
}

class BeamSearch final : public Search {
 public:
  BeamSearch(const DecodeShape& s, const ModelConfig& config, std::span<const uint32_t> max_out,
             const SearchParams& params)
      : config_(config),
        K_(s.beam),
        R_(s.rows()),
        kc_(s.candidates),
        n_(uint32_t(max_out.size())),
        max_out_(max_out.begin(), max_out.end()),
        params_(params),
        live_(R_),
        finished_(n_),
        done_(s.batch, true) {
    if (params.nbest == 0 || params.nbest > K_)
      throw Error("beam search: nbest " + std::to_string(params.nbest) + " not in 1..beam (" +
                  std::to_string(K_) + ")");
    for (uint32_t b = 0; b < n_; ++b) {
      live_[size_t{b} * K_].alive = true;
      done_[b] = false;
      ++active_;
    }
    tokens_.assign(R_, config.bos_id);
    origin_.resize(R_);
    for (uint32_t r = 0; r < R_; ++r) origin_[r] = int32_t(r);
  }

  void advance(std::span<const float> logp, std::span<const uint32_t> token) override {
    const ModelConfig& config = config_;
    const uint32_t K = K_, R = R_, kc = kc_, t = t_;
    std::vector<Live> next(R);
    for (uint32_t r = 0; r < R; ++r) {
      origin_[r] = int32_t(r);
      tokens_[r] = config.eos_id;
    }
    for (uint32_t b = 0; b < n_; ++b) {
      if (done_[b]) continue;
      cands_.clear();
      for (uint32_t j = 0; j < K; ++j) {
        const uint32_t r = b * K + j;
        if (!live_[r].alive) continue;
        for (uint32_t i = 0; i < kc; ++i) {
          const int32_t tok = int32_t(token[size_t{r} * kc + i]);
          if (!generable(tok, config)) continue;
          cands_.push_back({live_[r].logprob + double(logp[size_t{r} * kc + i]), r, i, tok});
        }
      }
      std::stable_sort(cands_.begin(), cands_.end(), [](const Candidate& x, const Candidate& y) {
        return x.logprob > y.logprob;
      });
      const bool last = t + 1 >= max_out_[b];
      auto& fin = finished_[b];
      uint32_t kept = 0;
      double best_live = -std::numeric_limits<double>::infinity();
      for (const Candidate& c : cands_) {
        if (kept + fin.size() >= K) break;
        if (c.token == config.eos_id || last) {
          std::vector<int32_t> toks = live_[c.row].tokens;
          if (c.token != config.eos_id) toks.push_back(c.token);
          fin.push_back(
              finish(std::move(toks), c.logprob, c.token == config.eos_id, params_.alpha));
          continue;
        }
        const uint32_t r = b * K + kept++;
        next[r].tokens = live_[c.row].tokens;
        next[r].tokens.push_back(c.token);
        next[r].logprob = c.logprob;
        next[r].alive = true;
        origin_[r] = int32_t(c.row);
        tokens_[r] = c.token;
        best_live = std::max(best_live, c.logprob);
      }
      std::stable_sort(fin.begin(), fin.end(), better);
      bool stop = kept == 0 || fin.size() >= K;
      if (!stop && fin.size() >= params_.nbest) {
        const double bound = best_live / length_penalty(max_out_[b], params_.alpha);
        stop = bound <= fin[params_.nbest - 1].score;
      }
      if (stop) {
        done_[b] = true;
        --active_;
        for (uint32_t j = 0; j < K; ++j) {
          next[b * K + j].alive = false;
          origin_[b * K + j] = int32_t(b * K + j);
          tokens_[b * K + j] = config.eos_id;
        }
      }
    }
    live_ = std::move(next);
    ++t_;
  }

  std::vector<std::vector<Hypothesis>> take_results() override {
    for (auto& fin : finished_)
      if (fin.size() > params_.nbest) fin.resize(params_.nbest);
    return std::move(finished_);
  }

 private:
  ModelConfig config_;
  uint32_t K_, R_, kc_, n_;
  std::vector<uint32_t> max_out_;
  SearchParams params_;
  std::vector<Live> live_;
  std::vector<std::vector<Hypothesis>> finished_;
  std::vector<bool> done_;
  std::vector<Candidate> cands_;
};

class GreedySearch final : public Search {
 public:
  GreedySearch(const DecodeShape& s, const ModelConfig& config, std::span<const uint32_t> max_out,
               float alpha)
      : config_(config),
        kc_(s.candidates),
        n_(uint32_t(max_out.size())),
        max_out_(max_out.begin(), max_out.end()),
        alpha_(alpha),
        out_(n_),
        logprob_(n_, 0.0),
        done_(s.batch, true),
        eos_(n_, false) {
    if (s.beam != 1) throw Error("greedy search needs a graph with beam 1");
    tokens_.assign(s.batch, config.bos_id);
    active_ = n_;
    for (uint32_t b = 0; b < n_; ++b) done_[b] = false;
  }

  void advance(std::span<const float> logp, std::span<const uint32_t> token) override {
    const ModelConfig& config = config_;
    const uint32_t kc = kc_, t = t_;
    for (uint32_t b = 0; b < n_; ++b) {
      if (done_[b]) continue;
      uint32_t i = 0;
      while (i + 1 < kc && !generable(int32_t(token[size_t{b} * kc + i]), config)) ++i;
      const int32_t tok = int32_t(token[size_t{b} * kc + i]);
      logprob_[b] += double(logp[size_t{b} * kc + i]);
      if (tok == config.eos_id) {
        eos_[b] = true;
      } else {
        out_[b].push_back(tok);
        tokens_[b] = tok;
      }
      if (tok == config.eos_id || t + 1 >= max_out_[b]) {
        done_[b] = true;
        tokens_[b] = config.eos_id;
        --active_;
      }
    }
    ++t_;
  }

  std::vector<std::vector<Hypothesis>> take_results() override {
    std::vector<std::vector<Hypothesis>> result(n_);
    for (uint32_t b = 0; b < n_; ++b)
      result[b].push_back(finish(std::move(out_[b]), logprob_[b], eos_[b], alpha_));
    return result;
  }

 private:
  ModelConfig config_;
  uint32_t kc_, n_;
  std::vector<uint32_t> max_out_;
  float alpha_;
  std::vector<std::vector<int32_t>> out_;
  std::vector<double> logprob_;
  std::vector<bool> done_, eos_;
};

void check_lengths(const DecodeShape& s, std::span<const uint32_t> max_out) {
  if (max_out.size() > s.batch)
    throw Error("search: " + std::to_string(max_out.size()) + " sentences for a batch of " +
                std::to_string(s.batch));
  for (uint32_t m : max_out)
    if (m == 0 || m > s.max_out)
      throw Error("search: maximum output length " + std::to_string(m) + " not in 1.." +
                  std::to_string(s.max_out));
}

void run_to_end(DecodeGraph& graph, Search& search) {
  while (!search.done()) {
    graph.step(search.t(), search.tokens(), search.origin());
    search.advance(graph.logp(), graph.token());
  }
}

}  // namespace

std::unique_ptr<Search> make_beam_search(const DecodeShape& shape, const ModelConfig& config,
                                         std::span<const uint32_t> max_out,
                                         const SearchParams& params) {
  check_lengths(shape, max_out);
  return std::make_unique<BeamSearch>(shape, config, max_out, params);
}

std::unique_ptr<Search> make_greedy_search(const DecodeShape& shape, const ModelConfig& config,
                                           std::span<const uint32_t> max_out, float alpha) {
  check_lengths(shape, max_out);
  return std::make_unique<GreedySearch>(shape, config, max_out, alpha);
}

std::vector<std::vector<Hypothesis>> beam_search(DecodeGraph& graph, const ModelConfig& config,
                                                 std::span<const uint32_t> max_out,
                                                 const SearchParams& params) {
  auto search = make_beam_search(graph.shape(), config, max_out, params);
  run_to_end(graph, *search);
  return search->take_results();
}

std::vector<Hypothesis> greedy_search(DecodeGraph& graph, const ModelConfig& config,
                                      std::span<const uint32_t> max_out, float alpha) {
  auto search = make_greedy_search(graph.shape(), config, max_out, alpha);
  run_to_end(graph, *search);
  std::vector<Hypothesis> out;
  for (auto& h : search->take_results()) out.push_back(std::move(h[0]));
  return out;
}

}  // namespace vkf::model::decode
