#include "tune/attention_candidates.h"

#include <algorithm>
#include <cmath>

namespace vkf::tune {
namespace {

using Unroll = ops::AttentionTiles::Unroll;

double distance(const ops::AttentionTiles& a, const ops::AttentionTiles& b) {
  auto d = [](uint32_t x, uint32_t y) {
    return x && y ? std::fabs(std::log2(double(x) / double(y))) : 0.0;
  };
  if (a.path != b.path) return 100.0;
  if (a.path == ops::AttentionPath::rows) return d(a.rows, b.rows) + (a.unroll != b.unroll);
  return d(a.workgroup, b.workgroup) + d(a.block_q, b.block_q) + d(a.block_k, b.block_k);
}

}  // namespace

ops::AttentionTiles attention_default(const DeviceInfo& info, const ops::AttentionProblem& p) {
  ops::AttentionTiles t = ops::attention_default_tiles(info, p.kernel, p.d_k, p.d_v);
  if (t.path == ops::AttentionPath::rows) {
    const uint32_t len = p.kernel == ops::AttentionKernel::backward_kv ? p.len_k : p.len_q;
    const uint32_t lanes = std::max(1u, info.subgroup_size);
    t.rows = std::max(1u, std::min(t.rows, (len + lanes - 1) / lanes));
    t.unroll = ops::attention_default_unroll(info);
  }
  return t;
}

std::vector<ops::AttentionTiles> attention_candidates(const DeviceInfo& info,
                                                      const ops::AttentionProblem& p) {
  const ops::AttentionTiles prior = attention_default(info, p);
  std::vector<ops::AttentionTiles> pool;
  // The rows path. The forward kernel is always unrolled (it does not read the field), so its
  // candidates vary the rows alone, with the default's value (or unrolled, off the rows path).
  const bool forward = p.kernel == ops::AttentionKernel::forward;
  const Unroll forward_unroll =
      prior.path == ops::AttentionPath::rows ? prior.unroll : Unroll::unrolled;
  // Where the driver compiles the rows kernels slowly (ops::slow_rows_compiler), each compile
  // of more than 2 rows a lane or an unrolled loop takes minutes at d 64, past any budget the
  // tuner is given: those are not tried there.
  const bool slow = ops::slow_rows_compiler(info);
  for (uint32_t rows : {1u, 2u, 3u, 4u, 6u, 8u})
    for (Unroll u : {Unroll::rolled, Unroll::unrolled}) {
      if (forward && u != forward_unroll) continue;
      if (slow && (rows > 2 || u == Unroll::unrolled)) continue;
      ops::AttentionTiles t;
      t.path = ops::AttentionPath::rows;
      t.rows = rows;
      t.unroll = u;
      pool.push_back(t);
    }
  for (uint32_t wg : {64u, 128u, 256u})
    for (uint32_t bq : {8u, 16u, 32u, 64u})
      for (uint32_t bk : {8u, 16u, 32u, 64u}) {
        ops::AttentionTiles t{wg, bq, bk, ops::AttentionPath::tiled};
        pool.push_back(t);
      }
  std::stable_sort(pool.begin(), pool.end(),
                   [&](const ops::AttentionTiles& a, const ops::AttentionTiles& b) {
                     return distance(a, prior) < distance(b, prior);
                   });
  std::vector<ops::AttentionTiles> out{prior};
  for (const ops::AttentionTiles& t : pool) {
    if (!ops::attention_tiles_misfit(info, p.kernel, t, p.d_k, p.d_v).empty()) continue;
    if (std::any_of(out.begin(), out.end(),
                    [&](const ops::AttentionTiles& o) { return ops::same_kernel(o, t); }))
      continue;
    out.push_back(t);
  }
  return out;
}

}  // namespace vkf::tune
