#pragma once
// The tuner's search over one shape class, whatever the op family: the candidates in order (the
// default first: what an untuned run gets), each timed, pruned when it cannot win, and checked
// against the CPU reference only when it would be kept, so that a fast wrong kernel never wins;
// no candidate is started once the deadline has passed (the default excepted: the speed-up is
// against it), and the ones left are counted as untried. A winner other than the default is then
// timed again, alternating with the default: on a machine whose speed moves between runs (a
// shared CPU, a GPU changing clocks) one lucky timing must not replace the table's row.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/error.h"

namespace vkf::tune {

// Hears of each candidate before it is timed: its index, the count, the best so far.
using StepReport =
    std::function<void(size_t candidate, size_t candidates, const std::string& best)>;

template <class Config>
struct SearchSpace {
  std::vector<Config> candidates;  // the default first
  std::function<std::string(const Config&)> describe;
  // Seconds of one run; may stop early above `give_up_above`; throws Error when the op
  // refuses the configuration.
  std::function<double(const Config&, double give_up_above)> time;
  // "" when the candidate computes right; else what was wrong.
  std::function<std::string(const Config&)> check;
};

template <class Config>
struct SearchResult {
  Config config;  // the winner: the default unless a checked candidate was faster
  double default_seconds = 0, seconds = 0;
  uint32_t tried = 0, untried = 0;
  std::vector<std::pair<std::string, std::string>> rejected;  // (configuration, why)
};

// A default that fails the check is reported among the rejected and the first correct
// candidate replaces it; with none correct, the result keeps the default (the run behaves as
// untuned). `o` (TunerOptions): prune_factor, max_candidates (0: as many as the deadline
// allows), confirm_rounds and min_gain: a winner other than a correct default is kept only when
// the median of its timings, after confirm_rounds more of each alternating with the default's,
// is below the default's median by min_gain or more; else the default stays and the winner is
// listed among the rejected, with the ratio measured. The confirmation re-times candidates
// already tried, so it runs past the deadline (2 x confirm_rounds runs at most).
template <class Config, class Options>
SearchResult<Config> search(const SearchSpace<Config>& s, const Options& o,
                            std::chrono::steady_clock::time_point deadline,
                            const StepReport& step = {}) {
  if (s.candidates.empty()) throw Error("the tuner has no candidate configuration");
  SearchResult<Config> r;
  constexpr double inf = std::numeric_limits<double>::infinity();
  double best = inf;
  bool have_best = false, default_correct = false;
  size_t winner = 0;
  const size_t count =
      o.max_candidates ? std::min(o.max_candidates, s.candidates.size()) : s.candidates.size();
  for (size_t i = 0; i < count; ++i) {
    if (i > 0 && std::chrono::steady_clock::now() >= deadline) {
      r.untried = uint32_t(count - i);
      break;
    }
    const Config& cfg = s.candidates[i];
    if (step) step(i, s.candidates.size(), have_best ? s.describe(r.config) : std::string());
    double t = 0;
    try {
      t = s.time(cfg, have_best ? best * o.prune_factor : inf);
    } catch (const Error& e) {
      r.rejected.emplace_back(s.describe(cfg), std::string("the op refused it: ") + e.what());
      continue;
    }
    ++r.tried;
    if (i == 0) r.default_seconds = t;
    if (have_best && t >= best) continue;
    // Only a candidate that would be kept is checked: fast and wrong must never win.
    if (std::string why = s.check(cfg); !why.empty()) {
      r.rejected.emplace_back(s.describe(cfg), why);
      continue;
    }
    if (i == 0) default_correct = true;
    best = t;
    have_best = true;
    winner = i;
    r.config = cfg;
  }
  if (!have_best) {
    r.config = s.candidates.front();
    r.seconds = r.default_seconds;
    return r;
  }
  r.seconds = best;
  if (winner == 0 || !default_correct || o.confirm_rounds == 0) return r;
  const Config& fallback = s.candidates.front();
  std::vector<double> d{r.default_seconds}, w{best};
  for (uint32_t k = 0; k < o.confirm_rounds; ++k) {
    d.push_back(s.time(fallback, inf));
    w.push_back(s.time(r.config, inf));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  r.default_seconds = median(d);
  const double mine = median(w);
  if (mine * (1 + o.min_gain) <= r.default_seconds) {
    r.seconds = mine;
    return r;
  }
  char ratio[96];
  std::snprintf(ratio, sizeof ratio,
                "%.3fx the default's speed when timed again (a win needs %.2fx)",
                mine > 0 ? r.default_seconds / mine : 0.0, 1 + o.min_gain);
  r.rejected.emplace_back(s.describe(r.config), std::string("not confirmed: ") + ratio);
  r.config = fallback;
  r.seconds = r.default_seconds;
  return r;
}

}  // namespace vkf::tune
