#include "tune/row_candidates.h"

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

}  // namespace vkf::tune
