#include "tune/layer_norm_family.h"

#include <algorithm>
#include <random>

#include "engine/error.h"
#include "engine/ops/layer_norm.h"
#include "reference/layer_norm_case.h"

namespace vkf::tune {
namespace {

// One shape through the LayerNorm harness (reference/layer_norm_case.h): the candidate forced
// on the forward and the backward, outputs poisoned, the tests' tolerances.
std::string check_layer_norm_shape(Device& dev, const ops::LayerNormConfig& c, DType t,
                                   uint32_t rows, uint32_t d, bool wrong) {
  ref::LayerNormCase lc;
  lc.rows = rows, lc.d = d, lc.dtype = t, lc.config = c;
  std::mt19937 rng(rows * 977 + d);
  const ref::LayerNormRun run(dev, lc, rng);
  if (std::string refused = run_harness(dev, run, wrong); !refused.empty()) return refused;
  return first_failure(run.compare(ref::layer_norm_tolerance(t)),
                       std::to_string(rows) + " rows of " + std::to_string(d));
}

}  // namespace

std::vector<ops::LayerNormConfig> layer_norm_candidates(const DeviceInfo& info,
                                                        const ops::LayerNormProblem& p) {
  using Reads = ops::RowKernelConfig::Reads;
  // Texel reads where views of the whole [rows, d] tensors fit (the tuner's buffers start at
  // offset 0).
  const uint64_t n = uint64_t{p.rows} * p.d;
  const bool texel_fits = n <= info.max_texel_buffer_elements && n <= 0x7fffffffu;
  const ops::LayerNormConfig prior = ops::layer_norm_default_config(info, p.d);
  std::vector<ops::LayerNormConfig> pool;
  for (Reads reads : {Reads::storage, Reads::texel})
    for (ops::RowReduce r :
         {ops::RowReduce::subgroup_rows, ops::RowReduce::subgroup, ops::RowReduce::shared})
      for (uint32_t wg : k_workgroups) {
        const ops::LayerNormConfig c{wg, r, reads};
        if (reads == Reads::texel && !texel_fits) continue;
        if (c != prior && ops::layer_norm_config_misfit(info, c).empty()) pool.push_back(c);
      }
  // The prior's texel twin first (1.05-1.24x on Mesa 22.3's lavapipe, 0.6-0.95x on Mesa 25 and 26),
  // then workgroup steps, a reduction flip after them.
  std::stable_sort(pool.begin(), pool.end(), [&](const auto& a, const auto& b) {
    auto d = [&](const ops::LayerNormConfig& c) {
      return (c.reduce != prior.reduce ? 10.0 : 0.0) + (c.reads != prior.reads ? 0.5 : 0.0) +
             wg_distance(c.workgroup_size, prior.workgroup_size);
    };
    return d(a) < d(b);
  });
  pool.insert(pool.begin(), prior);
  return pool;
}

std::string check_layer_norm(Device& dev, const ops::LayerNormConfig& candidate,
                             const ops::LayerNormProblem& p, const Sabotage& sabotage) {
  const bool wrong = sabotage && sabotage(ops::describe(candidate));
  // The problem's row length, and an odd one near it (no workgroup divides it).
  for (auto [rows, d] : {std::pair{13u, p.d}, std::pair{7u, p.d | 1u}})
    if (std::string why = check_layer_norm_shape(dev, candidate, p.dtype, rows, d, wrong);
        !why.empty())
      return why;
  return "";
}

TunedLayerNorm tune_layer_norm(Device& dev, const ops::LayerNormProblem& p, Timer& timer,
                               const TunerOptions& options,
                               std::chrono::steady_clock::time_point deadline,
                               const StepReport& step) {
  const std::string cls = ops::layer_norm_shape_class(p);
  const DType t = p.dtype;
  const uint64_t n = uint64_t(p.rows) * p.d, es = dtype_bytes(t);
  Buffer x = dev.allocate(n * es, "tuner x"), y = dev.allocate(n * es, "tuner y"),
         dy = dev.allocate(n * es, "tuner dy"), dx = dev.allocate(n * es, "tuner dx"),
         gamma = dev.allocate(p.d * 4, "tuner gamma"), beta = dev.allocate(p.d * 4, "tuner beta"),
         mean = dev.allocate(p.rows * 4, "tuner mean"),
         rstd = dev.allocate(p.rows * 4, "tuner rstd"),
         dgamma = dev.allocate(p.d * 4, "tuner dgamma"),
         dbeta = dev.allocate(p.d * 4, "tuner dbeta"),
         scratch =
             dev.allocate(ops::layer_norm_backward_scratch_bytes(p.rows, p.d), "tuner scratch");
  fill_small(dev, {&x, &dy}, t);
  fill_small(dev, {&gamma, &beta}, DType::f32);
  ops::LayerNormForwardArgs f;
  f.dtype = t, f.x = x, f.gamma = gamma, f.beta = beta, f.y = y, f.mean = mean, f.rstd = rstd;
  f.rows = p.rows, f.d = p.d;
  ops::LayerNormBackwardArgs b;
  b.dtype = t, b.dy = dy, b.h = x, b.gamma = gamma, b.mean = mean, b.rstd = rstd, b.dx = dx;
  b.dgamma = dgamma, b.dbeta = dbeta, b.scratch = scratch, b.rows = p.rows, b.d = p.d;
  {  // The statistics the backward reads.
    Recorder rec(dev);
    ops::layer_norm_forward(dev, rec, f);
    rec.finish().run();
  }
  SearchSpace<ops::LayerNormConfig> space;
  space.candidates = layer_norm_candidates(dev.info(), p);
  space.describe = [](const ops::LayerNormConfig& c) { return ops::describe(c); };
  space.time = [&](const ops::LayerNormConfig& c, double give_up) {
    return time_sequence(dev, timer, ops::describe(c), cls, give_up, [&](Recorder& rec) {
      if (p.backward) {
        ops::LayerNormBackwardArgs xb = b;
        xb.workgroup_size = c.workgroup_size, xb.reduce = c.reduce, xb.reads = c.reads;
        ops::layer_norm_backward(dev, rec, xb);
      } else {
        ops::LayerNormForwardArgs xf = f;
        xf.workgroup_size = c.workgroup_size, xf.reduce = c.reduce, xf.reads = c.reads;
        ops::layer_norm_forward(dev, rec, xf);
      }
    });
  };
  space.check = [&](const ops::LayerNormConfig& c) {
    return check_layer_norm(dev, c, p, options.sabotage);
  };
  return tuned_entry<ops::LayerNormFamily>(p, ops::describe(space.candidates.front()),
                                           search(space, options, deadline, step));
}

}  // namespace vkf::tune
