#include "tune/topk_family.h"

#include <algorithm>
#include <random>

#include "engine/error.h"
#include "engine/ops/topk.h"
#include "reference/stored.h"
#include "reference/topk_case.h"

namespace vkf::tune {

std::vector<ops::TopKConfig> topk_candidates(const DeviceInfo& info, const ops::TopKProblem& p) {
  using ops::TopKPath;
  const ops::TopKConfig prior = ops::choose_topk(info, nullptr, p).config;
  auto same = [](const ops::TopKConfig& a, const ops::TopKConfig& b) {
    return a.path == b.path && a.workgroup_size == b.workgroup_size &&
           (a.path == TopKPath::subgroup_rows ||
            (a.per_thread == b.per_thread && a.prune == b.prune));
  };
  std::vector<ops::TopKConfig> pool;
  auto add = [&](const ops::TopKConfig& c) {
    if (ops::topk_config_misfit(info, c, p).empty() && !same(c, prior) &&
        std::none_of(pool.begin(), pool.end(), [&](const auto& x) { return same(x, c); }))
      pool.push_back(c);
  };
  // A subgroup per row: a workgroup of one subgroup, and of several.
  for (uint32_t wg : {std::max(1u, info.subgroup_size), 64u, 256u})
    add({wg, 1, false, TopKPath::subgroup_rows});
  for (uint32_t wg : {32u, 64u, 128u, 256u})
    for (uint32_t e : {8u, 16u, 32u})
      for (bool prune : {true, false}) add({wg, e, prune, TopKPath::chunks});
  std::stable_sort(pool.begin(), pool.end(), [&](const auto& a, const auto& b) {
    auto d = [&](const ops::TopKConfig& c) {
      if (c.path != prior.path) return wg_distance(c.workgroup_size, 64) * 0.1;  // first
      return 1.0 + (c.prune != prior.prune ? 10.0 : 0.0) +
             wg_distance(c.workgroup_size, prior.workgroup_size) +
             wg_distance(c.per_thread, prior.per_thread);
    };
    return d(a) < d(b);
  });
  pool.insert(pool.begin(), prior);
  return pool;
}

// Through the top-k harness (reference/topk_case.h): 9 rows of an odd length with many ties
// and masked entries, plain and with log-softmax (as decoding runs it).
std::string check_topk(Device& dev, const ops::TopKConfig& candidate, const ops::TopKProblem& p,
                       const Sabotage& sabotage) {
  ref::TopKCase c;
  c.rows = 9, c.n = std::max(std::min(p.n, 3001u) | 1u, p.k), c.k = p.k;
  c.dtype = p.dtype, c.config = candidate;
  std::mt19937 rng(c.n * 31 + c.k);
  const std::vector<float> x = ref::random_topk_values(c, ref::TopKValues::ties, rng);
  for (bool log_softmax : {false, true}) {
    c.log_softmax = log_softmax;
    const ref::TopKRun run(dev, c, x);
    const bool wrong = sabotage && sabotage(ops::describe(candidate));
    if (std::string refused = run_harness(dev, run, wrong); !refused.empty()) return refused;
    if (std::string why = first_failure(run.compare(), c.describe()); !why.empty()) return why;
  }
  return "";
}

TunedTopK tune_topk(Device& dev, const ops::TopKProblem& p, Timer& timer,
                    const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                    const StepReport& step) {
  const std::string cls = ops::topk_shape_class(p);
  const uint64_t n = uint64_t(p.rows) * p.n;
  Buffer values = dev.allocate(n * dtype_bytes(p.dtype), "tuner values"),
         top_v = dev.allocate(uint64_t{p.rows} * p.k * 4, "tuner top values"),
         top_i = dev.allocate(uint64_t{p.rows} * p.k * 4, "tuner top indices");
  // Logit-like values: all-equal ones would time the worst case of both paths (no entry below
  // the k-th), not what decoding sees.
  std::mt19937 rng(p.n);
  ref::upload_stored(dev, values, ref::random_stored(rng, n, p.dtype, -20.0f, 0.0f), p.dtype);
  SearchSpace<ops::TopKConfig> space;
  space.candidates = topk_candidates(dev.info(), p);
  uint64_t scratch_bytes = 16;
  for (const ops::TopKConfig& c : space.candidates)
    scratch_bytes = std::max(scratch_bytes, ops::topk_scratch_bytes(p.rows, p.n, p.k, c, true));
  Buffer scratch = dev.allocate(scratch_bytes, "tuner top-k scratch");
  // Timed as decoding runs it: the top-k of logits with their log-softmax.
  space.describe = [](const ops::TopKConfig& c) { return ops::describe(c); };
  space.time = [&](const ops::TopKConfig& c, double give_up) {
    return time_sequence(dev, timer, ops::describe(c), cls, give_up, [&](Recorder& rec) {
      ops::topk(dev, rec,
                {.dtype = p.dtype,
                 .values = values,
                 .out_values = top_v,
                 .out_indices = top_i,
                 .scratch = scratch,
                 .rows = p.rows,
                 .n = p.n,
                 .k = p.k,
                 .config = c,
                 .log_softmax = true});
    });
  };
  space.check = [&](const ops::TopKConfig& c) { return check_topk(dev, c, p, options.sabotage); };
  return tuned_entry<ops::TopKFamily>(p, ops::describe(space.candidates.front()),
                                      search(space, options, deadline, step));
}

}  // namespace vkf::tune
