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

void check_inputs(const DecodeGraph& graph, std::span<const uint32_t> max_out) {
  const DecodeShape& s = graph.shape();
  if (max_out.size() > s.batch)
    throw Error("search: " + std::to_string(max_out.size()) + " sentences for a batch of " +
                std::to_string(s.batch));
  for (uint32_t m : max_out)
    if (m == 0 || m > s.max_out)
      throw Error("search: maximum output length " + std::to_string(m) + " not in 1.." +
                  std::to_string(s.max_out));
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

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(DecodeGraph& graph, const ModelConfig& config,
                                                 std::span<const uint32_t> max_out,
                                                 const SearchParams& params) {
  check_inputs(graph, max_out);
  const DecodeShape& s = graph.shape();
  const uint32_t K = s.beam, R = s.rows(), kc = s.candidates;
  const uint32_t n = uint32_t(max_out.size());
  if (params.nbest == 0 || params.nbest > K)
    throw Error("beam search: nbest " + std::to_string(params.nbest) + " not in 1..beam (" +
                std::to_string(K) + ")");

  std::vector<Live> live(R);
  std::vector<std::vector<Hypothesis>> finished(n);
  std::vector<bool> done(s.batch, true);
  uint32_t active = 0;
  for (uint32_t b = 0; b < n; ++b) {
    live[size_t{b} * K].alive = true;
    done[b] = false;
    ++active;
  }
  std::vector<int32_t> tokens(R, config.bos_id), origin(R);
  for (uint32_t r = 0; r < R; ++r) origin[r] = int32_t(r);

  std::vector<Candidate> cands;
  for (uint32_t t = 0; active > 0; ++t) {
    graph.step(t, tokens, origin);
    const auto logp = graph.logp();
    const auto token = graph.token();
    std::vector<Live> next(R);
    for (uint32_t r = 0; r < R; ++r) {
      origin[r] = int32_t(r);
      tokens[r] = config.eos_id;
    }
    for (uint32_t b = 0; b < n; ++b) {
      if (done[b]) continue;
      cands.clear();
      for (uint32_t j = 0; j < K; ++j) {
        const uint32_t r = b * K + j;
        if (!live[r].alive) continue;
        for (uint32_t i = 0; i < kc; ++i) {
          const int32_t tok = int32_t(token[size_t{r} * kc + i]);
          if (!generable(tok, config)) continue;
          cands.push_back({live[r].logprob + double(logp[size_t{r} * kc + i]), r, i, tok});
        }
      }
      std::stable_sort(cands.begin(), cands.end(), [](const Candidate& x, const Candidate& y) {
        return x.logprob > y.logprob;
      });
      const bool last = t + 1 >= max_out[b];
      auto& fin = finished[b];
      uint32_t kept = 0;
      double best_live = -std::numeric_limits<double>::infinity();
      for (const Candidate& c : cands) {
        if (kept + fin.size() >= K) break;
        if (c.token == config.eos_id || last) {
          std::vector<int32_t> toks = live[c.row].tokens;
          if (c.token != config.eos_id) toks.push_back(c.token);
          fin.push_back(finish(std::move(toks), c.logprob, c.token == config.eos_id, params.alpha));
          continue;
        }
        const uint32_t r = b * K + kept++;
        next[r].tokens = live[c.row].tokens;
        next[r].tokens.push_back(c.token);
        next[r].logprob = c.logprob;
        next[r].alive = true;
        origin[r] = int32_t(c.row);
        tokens[r] = c.token;
        best_live = std::max(best_live, c.logprob);
      }
      std::stable_sort(fin.begin(), fin.end(), better);
      bool stop = kept == 0 || fin.size() >= K;
      if (!stop && fin.size() >= params.nbest) {
        const double bound = best_live / length_penalty(max_out[b], params.alpha);
        stop = bound <= fin[params.nbest - 1].score;
      }
      if (stop) {
        done[b] = true;
        --active;
        for (uint32_t j = 0; j < K; ++j) {
          next[b * K + j].alive = false;
          origin[b * K + j] = int32_t(b * K + j);
          tokens[b * K + j] = config.eos_id;
        }
      }
    }
    live = std::move(next);
  }
  for (auto& fin : finished)
    if (fin.size() > params.nbest) fin.resize(params.nbest);
  return finished;
}

std::vector<Hypothesis> greedy_search(DecodeGraph& graph, const ModelConfig& config,
                                      std::span<const uint32_t> max_out, float alpha) {
  check_inputs(graph, max_out);
  const DecodeShape& s = graph.shape();
  if (s.beam != 1) throw Error("greedy search needs a graph with beam 1");
  const uint32_t n = uint32_t(max_out.size()), kc = s.candidates;
  std::vector<int32_t> tokens(s.batch, config.bos_id);
  std::vector<std::vector<int32_t>> out(n);
  std::vector<double> logprob(n, 0.0);
  std::vector<bool> done(s.batch, true), eos(n, false);
  uint32_t active = n;
  for (uint32_t b = 0; b < n; ++b) done[b] = false;
  for (uint32_t t = 0; active > 0; ++t) {
    graph.step(t, tokens);
    const auto logp = graph.logp();
    const auto token = graph.token();
    for (uint32_t b = 0; b < n; ++b) {
      if (done[b]) continue;
      uint32_t i = 0;
      while (i + 1 < kc && !generable(int32_t(token[size_t{b} * kc + i]), config)) ++i;
      const int32_t tok = int32_t(token[size_t{b} * kc + i]);
      logprob[b] += double(logp[size_t{b} * kc + i]);
      if (tok == config.eos_id) {
        eos[b] = true;
      } else {
        out[b].push_back(tok);
        tokens[b] = tok;
      }
      if (tok == config.eos_id || t + 1 >= max_out[b]) {
        done[b] = true;
        tokens[b] = config.eos_id;
        --active;
      }
    }
  }
  std::vector<Hypothesis> result(n);
  for (uint32_t b = 0; b < n; ++b) result[b] = finish(std::move(out[b]), logprob[b], eos[b], alpha);
  return result;
}

}  // namespace vkf::model::decode
