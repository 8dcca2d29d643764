#include "bench/tune/row_candidates.h"

#include <algorithm>
#include <cmath>

namespace vkf::tune {
namespace {

constexpr uint32_t k_workgroups[] = {32, 64, 128, 256, 512, 1024};

double wg_distance(uint32_t a, uint32_t b) {
  return std::fabs(std::log2(double(a) / double(b)));
}

}  // namespace

std::vector<ops::LayerNormConfig> layer_norm_candidates(const DeviceInfo& info,
                                                        const ops::LayerNormProblem& p) {
  const ops::LayerNormConfig prior = ops::layer_norm_default_config(info, p.d);
  std::vector<ops::LayerNormConfig> pool;
  for (ops::RowReduce r :
       {ops::RowReduce::subgroup_rows, ops::RowReduce::subgroup, ops::RowReduce::shared})
    for (uint32_t wg : k_workgroups) {
      const ops::LayerNormConfig c{wg, r};
      if (c != prior && ops::layer_norm_config_misfit(info, c).empty()) pool.push_back(c);
    }
  std::stable_sort(pool.begin(), pool.end(), [&](const auto& a, const auto& b) {
    auto d = [&](const ops::LayerNormConfig& c) {
      return (c.reduce != prior.reduce ? 10.0 : 0.0) +
             wg_distance(c.workgroup_size, prior.workgroup_size);
    };
    return d(a) < d(b);
  });
  pool.insert(pool.begin(), prior);
  return pool;
}

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

}  // namespace vkf::tune
