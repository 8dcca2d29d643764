#include "tune/adam_family.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "engine/error.h"
#include "engine/ops/adam.h"
#include "engine/step_scalars.h"
#include "reference/adam_case.h"

namespace vkf::tune {

std::vector<ops::AdamConfig> adam_candidates(const DeviceInfo& info, uint32_t tuned_n) {
  using Reads = ops::AdamConfig::Reads;
  const bool texel_fits = tuned_n <= info.max_texel_buffer_elements;
  ops::AdamConfig prior = ops::adam_default_config(info);
  if (!texel_fits) prior.reads = Reads::storage;  // what adam() falls back to
  std::vector<ops::AdamConfig> pool;
  for (Reads reads : {Reads::storage, Reads::texel})
    for (uint32_t elems : {1u, 2u, 4u, 8u})
      for (uint32_t wg : k_workgroups) {
        const ops::AdamConfig c{wg, elems, reads};
        if (reads == Reads::texel && !texel_fits) continue;
        if (c != prior && ops::adam_config_misfit(info, c).empty()) pool.push_back(c);
      }
  std::stable_sort(pool.begin(), pool.end(), [&](const auto& a, const auto& b) {
    auto d = [&](const ops::AdamConfig& c) {
      return (c.reads != prior.reads ? 0.5 : 0.0) + wg_distance(c.elems, prior.elems) +
             wg_distance(c.workgroup_size, prior.workgroup_size);
    };
    return d(a) < d(b);
  });
  pool.insert(pool.begin(), prior);
  return pool;
}

// Through the Adam harness (reference/adam_case.h): one clipped AdamW step of 1001 parameters
// (no workgroup or element count divides it) from random moments, the tests' tolerances.
std::string check_adam(Device& dev, const ops::AdamConfig& candidate, const Sabotage& sabotage) {
  ref::AdamCase c;
  c.n = 1001, c.step = 3, c.grad_scale = 0.5f;
  c.options = {.lr = 2.0f, .d_model = 64.0f, .warmup_steps = 4.0f, .weight_decay = 0.01f};
  c.options.max_grad_norm = 1.0f;  // random gradients of 1001 elements have norm ~18: clipped
  c.config = candidate;
  std::mt19937 rng(c.n);
  const ref::AdamRun run(dev, c, rng);
  const bool wrong = sabotage && sabotage(ops::describe(candidate));
  if (std::string refused = run_harness(dev, run, wrong); !refused.empty()) return refused;
  return first_failure(run.compare(ref::adam_tolerance()), c.describe());
}

TunedAdam tune_adam(Device& dev, const ops::AdamProblem& p, Timer& timer,
                    const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                    const StepReport& step) {
  const std::string cls = ops::adam_shape_class(p);
  const uint32_t n = adam_tuned_count(p);
  Buffer w = dev.allocate(uint64_t{n} * 4, "tuner w"), g = dev.allocate(uint64_t{n} * 4, "tuner g"),
         m = dev.allocate(uint64_t{n} * 4, "tuner m"), v = dev.allocate(uint64_t{n} * 4, "tuner v"),
         norm = dev.allocate(16, "tuner norm"),
         stepb = dev.allocate(sizeof(StepScalars), "tuner step", MemoryKind::host);
  StepScalars st;
  std::memcpy(stepb.mapped(), &st, sizeof st);
  fill_small(dev, {&w, &g, &m, &v}, DType::f32);
  dev.upload(norm, std::vector<uint32_t>{0, 0, 0, 0});
  SearchSpace<ops::AdamConfig> space;
  space.candidates = adam_candidates(dev.info(), n);
  space.describe = [](const ops::AdamConfig& c) { return ops::describe(c); };
  space.time = [&](const ops::AdamConfig& c, double give_up) {
    return time_sequence(dev, timer, space.describe(c), cls, give_up, [&](Recorder& rec) {
      ops::adam(dev, rec,
                {.params = w,
                 .grads = g,
                 .m = m,
                 .v = v,
                 .step = stepb,
                 .grad_norm = norm,
                 .n = n,
                 .config = c});
    });
  };
  space.check = [&](const ops::AdamConfig& c) { return check_adam(dev, c, options.sabotage); };
  return tuned_entry<ops::AdamFamily>(p, space.describe(space.candidates.front()),
                                      search(space, options, deadline, step));
}

}  // namespace vkf::tune
