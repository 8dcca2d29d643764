#include "tune/cross_entropy_family.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "engine/error.h"
#include "engine/ops/loss.h"
#include "engine/step_scalars.h"
#include "reference/cross_entropy_case.h"

namespace vkf::tune {

std::vector<ops::RowKernelConfig> cross_entropy_candidates(const DeviceInfo& info,
                                                           const ops::CrossEntropyProblem& p) {
  using Reads = ops::RowKernelConfig::Reads;
  // Texel reads where a view of the whole logits fits (the tuner's buffers start at offset 0);
  // where it does not, the default reads storage, as cross_entropy() falls back to.
  const uint64_t logits = uint64_t{p.rows} * p.vocab;
  const bool texel_fits = logits <= info.max_texel_buffer_elements && logits <= 0x7fffffffu;
  ops::RowKernelConfig prior = ops::row_kernel_default_config(info);
  if (!texel_fits) prior.reads = Reads::storage;
  std::vector<ops::RowKernelConfig> pool;
  for (auto reads : {Reads::texel, Reads::storage})
    for (auto sg : {ops::RowKernelConfig::Subgroup::on, ops::RowKernelConfig::Subgroup::off})
      for (uint32_t wg : k_workgroups) {
        const ops::RowKernelConfig c{wg, sg, reads};
        if (reads == Reads::texel && !texel_fits) continue;
        if (!ops::same_kernel(c, prior) && ops::row_kernel_config_misfit(info, c).empty())
          pool.push_back(c);
      }
  // A read-path flip is tried before any workgroup step (1.8x on Mesa 22.3's lavapipe, 0.5x on
  // Mesa 26's), a reduction flip after them.
  std::stable_sort(pool.begin(), pool.end(), [&](const auto& a, const auto& b) {
    auto d = [&](const ops::RowKernelConfig& c) {
      return (c.subgroup != prior.subgroup ? 10.0 : 0.0) + (c.reads != prior.reads ? 0.5 : 0.0) +
             wg_distance(c.workgroup_size, prior.workgroup_size);
    };
    return d(a) < d(b);
  });
  pool.insert(pool.begin(), prior);
  return pool;
}

// Through the cross-entropy harness (reference/cross_entropy_case.h): label smoothing, a
// gradient scale, padding rows and a target outside the vocabulary among 9 rows, a vocabulary
// no workgroup divides.
std::string check_cross_entropy(Device& dev, const ops::RowKernelConfig& candidate,
                                const ops::CrossEntropyProblem& p, const Sabotage& sabotage) {
  ref::CrossEntropyCase c;
  c.rows = 9, c.vocab = std::min(p.vocab, 3000u) | 1u, c.pad_id = 0;
  c.label_smoothing = 0.1f, c.grad_scale = 0.37f;
  c.dtype = p.dtype, c.config = candidate;
  std::mt19937 rng(c.vocab);
  const ref::CrossEntropyRun run(dev, c, rng);
  const bool wrong = sabotage && sabotage(ops::describe(candidate));
  if (std::string refused = run_harness(dev, run, wrong); !refused.empty()) return refused;
  return first_failure(run.compare(ref::cross_entropy_tolerance(c.dtype, c.grad_scale)),
                       std::to_string(c.rows) + " rows of " + std::to_string(c.vocab));
}

TunedCrossEntropy tune_cross_entropy(Device& dev, const ops::CrossEntropyProblem& p, Timer& timer,
                                     const TunerOptions& options,
                                     std::chrono::steady_clock::time_point deadline,
                                     const StepReport& step) {
  const std::string cls = ops::cross_entropy_shape_class(p);
  const DType t = p.dtype;
  const uint64_t n = uint64_t(p.rows) * p.vocab, es = dtype_bytes(t);
  Buffer logits = dev.allocate(n * es, "tuner logits"),
         dlogits = dev.allocate(n * es, "tuner dlogits"),
         targets = dev.allocate(p.rows * 4, "tuner targets"),
         loss = dev.allocate(p.rows * 4, "tuner row_loss"),
         logp = dev.allocate(p.rows * 4, "tuner row_logp"),
         stepb = dev.allocate(sizeof(StepScalars), "tuner step", MemoryKind::host);
  StepScalars st;
  std::memcpy(stepb.mapped(), &st, sizeof st);
  fill_small(dev, {&logits}, t);
  dev.upload(targets, std::vector<int32_t>(p.rows, 1));
  ops::CrossEntropyArgs a;
  a.dtype = t, a.logits = logits, a.targets = targets, a.step = stepb, a.row_loss = loss;
  a.row_logp = logp, a.dlogits = dlogits, a.rows = p.rows, a.vocab = p.vocab, a.pad_id = 0;
  a.label_smoothing = 0.1f;
  SearchSpace<ops::RowKernelConfig> space;
  space.candidates = cross_entropy_candidates(dev.info(), p);
  space.describe = [](const ops::RowKernelConfig& c) { return ops::describe(c); };
  space.time = [&](const ops::RowKernelConfig& c, double give_up) {
    return time_sequence(dev, timer, ops::describe(c), cls, give_up, [&](Recorder& rec) {
      ops::CrossEntropyArgs x = a;
      x.config = c;
      ops::cross_entropy(dev, rec, x);
    });
  };
  space.check = [&](const ops::RowKernelConfig& c) {
    return check_cross_entropy(dev, c, p, options.sabotage);
  };
  return tuned_entry<ops::CrossEntropyFamily>(p, ops::describe(space.candidates.front()),
                                              search(space, options, deadline, step));
}

}  // namespace vkf::tune
