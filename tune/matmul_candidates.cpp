#include "tune/matmul_candidates.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/shader_registry.h"

namespace vkf::tune {
namespace {

bool runs(const ops::MatmulConfig& c, const DeviceInfo& info, const ops::MatmulProblem& p) {
  if (c.coopmat && (p.dtype != DType::f16 || shaders::find(c.coopmat_kernel()).empty()))
    return false;
  if (!c.coopmat) {
    // The kernel's own rules (the table test checks the rows against the same): one
    // invocation per block, and on the direct path one row of blocks per subgroup, with the A
    // rows shuffled across it.
    if (c.bm % c.tm || c.bn % c.tn || (c.bm / c.tm) * (c.bn / c.tn) != c.workgroup) return false;
    if (!c.shared && (c.bm != c.tm || c.tm % c.workgroup)) return false;
  }
  return ops::matmul_config_misfit(c, info).empty();
}

// The read path (texel views or storage buffers) is the nearest step: it is the axis whose best
// value changes with the driver version (texel views ran the CPU rows 1.1-2.3x faster on Mesa
// 22.3's lavapipe, and at a quarter of their storage-buffer rate on Mesa 25.0's), where a tile
// step (at least log2(8/6) = 0.415) moves the rate by 10-30%. So a budget that times two
// candidates times the prior through both paths.
double distance(const ops::MatmulConfig& a, const ops::MatmulConfig& b) {
  auto d = [](uint32_t x, uint32_t y) { return std::fabs(std::log2(double(x) / double(y))); };
  return d(a.tm, b.tm) + d(a.tn, b.tn) + d(a.workgroup, b.workgroup) + d(a.bk, b.bk) +
         (a.shared != b.shared ? 4.0 : 0.0) + (a.texel != b.texel ? 0.25 : 0.0);
}

// The direct path (no shared memory, one subgroup per workgroup): CPU devices' kind.
void direct(const DeviceInfo& info, std::vector<ops::MatmulConfig>& out) {
  std::vector<uint32_t> widths{info.subgroup_size};
  if (info.subgroup_size_control)
    for (uint32_t w : {8u, 16u, 32u, 64u})
      if (w != info.subgroup_size && w >= info.min_subgroup_size && w <= info.max_subgroup_size)
        widths.push_back(w);
  for (uint32_t wg : widths)
    for (uint32_t tm : {8u, 16u, 24u, 32u, 48u, 64u})
      for (uint32_t tn : {2u, 4u, 6u, 8u, 12u, 16u}) {
        if (tm % wg || tm * tn > 512) continue;
        ops::MatmulConfig c{"direct", wg, tm, wg * tn, 1, tm, tn, false};
        for (bool texel : {true, false}) {
          if (texel && !info.is_cpu()) continue;  // texel gathers pay on lavapipe only
          c.texel = texel;
          c.name = c.describe();
          out.push_back(c);
        }
      }
}

// Shared-memory staging: GPUs' kind.
void staged(const DeviceInfo&, std::vector<ops::MatmulConfig>& out) {
  for (uint32_t wg : {64u, 128u, 256u})
    for (uint32_t bm : {32u, 64u, 128u})
      for (uint32_t bn : {32u, 64u, 128u})
        for (uint32_t tm : {2u, 4u, 8u})
          for (uint32_t tn : {2u, 4u, 8u})
            for (uint32_t bk : {8u, 16u, 32u}) {
              if (bm % tm || bn % tn || (bm / tm) * (bn / tn) != wg) continue;
              ops::MatmulConfig c{"shared", wg, bm, bn, bk, tm, tn, true};
              c.texel = false;
              c.name = c.describe();
              out.push_back(c);
            }
}

// Coopmat2 tiles around the table's (whose tiles are ggml's, fitted to other NVIDIA cards):
// the driver splits a workgroup's tile among its subgroups and stages its blocks itself, so
// the tile, the invocations that share it and the k block are its whole search. Only where the
// device runs them (runs(): granularities, workgroup-scope limits); a pipeline takes NVIDIA's
// compiler seconds, so these come after the table's rows at equal distance.
void coopmat2_tiles(std::vector<ops::MatmulConfig>& out) {
  const ops::MatmulConfig& base = ops::matmul_config("nv_coopmat2");
  for (uint32_t wg : {128u, 256u})
    for (auto [bm, bn] :
         {std::pair{64u, 64u}, {64u, 128u}, {128u, 64u}, {128u, 128u}, {128u, 256u}, {256u, 128u}})
      for (uint32_t bk : {16u, 32u, 64u}) {
        // At most 128 fp32 accumulators an invocation, as the table's largest row holds:
        // beyond, registers spill.
        if (bm * bn > 128 * wg) continue;
        ops::MatmulConfig c = base;
        c.workgroup = wg, c.bm = c.tm = bm, c.bn = c.tn = bn, c.bk = bk;
        c.name = c.describe();
        out.push_back(c);
      }
}

}  // namespace

std::vector<ops::MatmulConfig> matmul_candidates(const DeviceInfo& info,
                                                 const ops::MatmulProblem& p) {
  std::vector<ops::MatmulConfig> out;
  auto add = [&](ops::MatmulConfig c) {
    // A row's unset texel choice is the device's default (texel views on CPU devices), made
    // explicit so that the same kernel is not timed twice.
    if (!c.coopmat && !c.texel) c.texel = info.is_cpu();
    if (!runs(c, info, p)) return;
    for (const ops::MatmulConfig& o : out)
      if (o.same_kernel(c)) return;
    out.push_back(c);
  };
  ops::MatmulConfig prior = *ops::table_matmul_config(info, p.trans_b, p.dtype, p.m, p.n).config;
  if (!prior.coopmat && !prior.texel) prior.texel = info.is_cpu();
  add(prior);
  // The other rows were fitted to other devices: they take their turn by distance from the
  // prior like the generated ones (before them at equal distance), so that a short budget goes
  // to the prior's neighbours first (on a CPU device, the direct path's).
  std::vector<ops::MatmulConfig> rest(ops::matmul_configs().begin(), ops::matmul_configs().end());
  for (ops::MatmulConfig& c : rest)
    if (!c.coopmat && !c.texel) c.texel = info.is_cpu();
  direct(info, rest);
  staged(info, rest);
  coopmat2_tiles(rest);
  std::stable_sort(rest.begin(), rest.end(),
                   [&](const ops::MatmulConfig& a, const ops::MatmulConfig& b) {
                     return distance(a, prior) < distance(b, prior);
                   });
  for (const ops::MatmulConfig& c : rest) add(c);
  return out;
}

}  // namespace vkf::tune
