#include "tune/matmul_family.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "engine/error.h"
#include "engine/ops/matmul.h"
#include "engine/shader_registry.h"
#include "reference/matmul_case.h"
#include "reference/stored.h"

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

namespace {

// One shape through the matmul harness (reference/matmul_case.h): the candidate forced, the
// problem's storage type and transposes, C poisoned where beta is 0, and every element held to
// the tests' tolerance relative to the sum of |terms|.
std::string check_shape(Device& dev, const ops::MatmulConfig& cfg, const ops::MatmulProblem& p,
                        ref::MatmulCase s, bool sabotage) {
  s.trans_a = p.trans_a, s.trans_b = p.trans_b, s.dtype = p.dtype, s.config = &cfg;
  std::mt19937 rng(s.m * 131 + s.n * 7 + s.k);
  const ref::MatmulRun run(dev, s, rng);
  try {
    Recorder rec(dev);
    run.record(rec, sabotage ? ref::k_wrong_bits : 0);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  const ref::Comparison cmp = run.compare(ref::matmul_tolerance(s.dtype));
  if (cmp.ok()) return "";
  return "wrong at " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         " batch " + std::to_string(s.batch) + ": " + cmp.describe();
}

ref::MatmulCase shape(uint32_t m, uint32_t n, uint32_t k, uint32_t batch, float beta,
                      ops::Epilogue epilogue, uint32_t split_k = 1) {
  ref::MatmulCase c;
  c.m = m, c.n = n, c.k = k, c.batch = batch, c.beta = beta, c.epilogue = epilogue;
  c.split_k = split_k;
  return c;
}

}  // namespace

std::string check_matmul(Device& dev, const ops::MatmulConfig& candidate,
                         const ops::MatmulProblem& p, const Sabotage& sabotage) {
  const bool wrong = sabotage && sabotage(candidate.describe());
  std::vector<ref::MatmulCase> shapes{shape(37, 45, 29, 2, 0.0f, ops::Epilogue::none),
                                      shape(36, 68, 44, 1, 0.5f, ops::Epilogue::bias)};
  // Where the problem has a split-k workspace and the candidate may split, its split too:
  // three slices of whole 256-byte runs, the last shorter, with beta and the epilogue (the
  // reduce's). matmul_split_k may throw on it: the check then says the op refused it.
  if (p.workspace && candidate.split_k.value_or(2) > 1 && ops::matmul_kernel_splits(candidate)) {
    const uint32_t granule = 256 / dtype_bytes(p.dtype);
    shapes.push_back(shape(37, 45, 5 * granule + 29, 1, 0.5f, ops::Epilogue::bias, 3));
  }
  try {
    for (const ref::MatmulCase& s : shapes)
      if (std::string why = check_shape(dev, candidate, p, s, wrong); !why.empty()) return why;
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return "";
}

namespace {

using Clock = std::chrono::steady_clock;

// The split-k workspace the tuner gives a problem that has one: within the device's largest
// storage buffer and 256 MiB. A training run sizes its own by the tuned split, so the tuner
// times no split whose partial products would take more.
constexpr uint64_t k_max_workspace_bytes = uint64_t(256) << 20;

ops::MatmulArgs problem_args(const ops::MatmulProblem& p) {
  ops::MatmulArgs args;
  args.m = p.m, args.n = p.n, args.k = p.k;
  args.trans_a = p.trans_a;
  args.trans_b = p.trans_b;
  args.dtype = p.dtype;
  return args;
}

uint64_t workspace_room(const DeviceInfo& info, const ops::MatmulProblem& p) {
  if (!p.workspace) return 0;
  // What the most slices that fit the cap would take (plan_matmul_split_k's partial products;
  // planned within the cap, so that a huge C asks for fewer slices, never past 32-bit indexing).
  ops::MatmulConfig most = ops::matmul_config("fallback");
  most.split_k = ops::k_matmul_max_split_k;
  const uint64_t cap = std::min(info.max_storage_buffer_range, k_max_workspace_bytes);
  return ops::plan_matmul_split_k(info, problem_args(p), most, cap).workspace_bytes;
}

// The operands of one shape, allocated once for every candidate, with the split-k workspace
// where the problem has one (MatmulProblem::workspace).
struct Operands {
  Buffer a, b, c, workspace;
};

Operands allocate(Device& dev, const ops::MatmulProblem& p) {
  const uint64_t es = dtype_bytes(p.dtype);
  Operands o{dev.allocate(uint64_t(p.m) * p.k * es, "tuner A"),
             dev.allocate(uint64_t(p.k) * p.n * es, "tuner B"),
             dev.allocate(uint64_t(p.m) * p.n * es, "tuner C"), Buffer()};
  if (const uint64_t room = workspace_room(dev.info(), p); room > 0)
    o.workspace = dev.allocate(room, "tuner split-k workspace");
  // Small values (0x3c00 halves are 1.0; the f32 pattern is a small normal number): the
  // timing does not depend on them, but denormals or NaN could slow a CPU device down.
  Recorder rec(dev);
  const uint32_t bits = p.dtype == DType::f16 ? 0x2c002c00u : 0x3d000000u;
  // Whole words only (an odd count of halves leaves its last one as allocated).
  for (const Buffer* b : {&o.a, &o.b})
    if (b->size() >= 4) rec.fill(b->ref().slice(0, b->size() & ~VkDeviceSize(3)), bits);
  rec.finish().run();
  return o;
}

double time_candidate(Device& dev, const Operands& o, const ops::MatmulProblem& p,
                      const ops::MatmulConfig& cfg, Timer& timer, double give_up_above) {
  ops::MatmulArgs args = problem_args(p);
  args.a = o.a;
  args.b = o.b;
  args.c = o.c;
  if (o.workspace.valid()) args.workspace = o.workspace;
  args.config = &cfg;
  Recorder rec(dev, timer.recorder_options(dev));
  ops::matmul(dev, rec, args);
  Sequence seq = rec.finish();
  return timer.seconds(seq, cfg.describe(), ops::matmul_shape_class(p), give_up_above);
}

// The split-k choices for the kernel `winner`, its own (the engine's rule) first: unsplit where
// the rule splits, then 2, 4, 8 and 16 slices where k and the workspace allow them, each as
// many slices as it actually cuts (k's 256-byte runs may round a count down), none twice.
std::vector<ops::MatmulConfig> split_candidates(const DeviceInfo& info, const ops::MatmulProblem& p,
                                                const ops::MatmulConfig& winner, uint64_t room) {
  std::vector<ops::MatmulConfig> out{winner};
  if (!p.workspace || !ops::matmul_kernel_splits(winner)) return out;
  const ops::MatmulArgs args = problem_args(p);
  std::vector<uint32_t> seen{ops::plan_matmul_split_k(info, args, winner, room).slices};
  for (uint32_t want : {1u, 2u, 4u, 8u, 16u}) {
    ops::MatmulConfig c = winner;
    c.split_k = want;
    const uint32_t slices = ops::plan_matmul_split_k(info, args, c, room).slices;
    if (std::find(seen.begin(), seen.end(), slices) != seen.end()) continue;
    seen.push_back(slices);
    c.split_k = slices;
    c.name = c.describe();
    out.push_back(c);
  }
  return out;
}

}  // namespace

TunedMatmul tune_matmul(Device& dev, const ops::MatmulProblem& shape, Timer& timer,
                        const TunerOptions& options, Clock::time_point deadline,
                        const StepReport& step) {
  TunedMatmul r;
  r.shape = shape;
  r.shape_class = ops::matmul_shape_class(shape);
  const std::vector<ops::MatmulConfig> candidates = matmul_candidates(dev.info(), shape);
  if (candidates.empty())
    throw Error("no matmul configuration fits " + dev.label() + " for " + r.shape_class);
  r.default_name =
      ops::table_matmul_config(dev.info(), shape.trans_b, shape.dtype, shape.m, shape.n)
          .config->name;
  const Operands o = allocate(dev, shape);
  SearchSpace<ops::MatmulConfig> space;
  space.candidates = candidates;
  space.describe = [](const ops::MatmulConfig& c) { return c.describe(); };
  space.time = [&](const ops::MatmulConfig& c, double give_up) {
    return time_candidate(dev, o, shape, c, timer, give_up);
  };
  space.check = [&](const ops::MatmulConfig& c) {
    return check_matmul(dev, c, shape, options.sabotage);
  };
  // A problem with a split-k workspace leaves the last quarter of its time to the split.
  const Clock::time_point now = Clock::now();
  const Clock::time_point kernel_deadline =
      shape.workspace && deadline > now ? now + (deadline - now) * 3 / 4 : deadline;
  SearchResult<ops::MatmulConfig> found = search(space, options, kernel_deadline, step);
  r.config = std::move(found.config);
  r.default_seconds = found.default_seconds;
  r.seconds = found.seconds;
  r.tried = found.tried;
  r.untried = found.untried;
  r.rejected = std::move(found.rejected);

  // Then the winner's split: the engine's rule against the other counts, as the kernels were
  // searched (the rule first, pruned, checked, a change confirmed by timing it again).
  // (VKF_MATMUL_SPLIT_K=0 turns the split off, tuned or not: nothing to time.)
  if (dev.options().ops.matmul_split_k == false) return r;
  space.candidates = split_candidates(dev.info(), shape, r.config, o.workspace.size());
  if (space.candidates.size() < 2) return r;
  const size_t kernels = candidates.size();
  const StepReport split_step = [&](size_t i, size_t n, const std::string& best) {
    if (step) step(kernels + i, kernels + n, best);
  };
  SearchResult<ops::MatmulConfig> split = search(space, options, deadline, split_step);
  // A split that won is reported by its speed-up over the kernel it splits, each timed beside
  // the other: the kernels' ratio times the split's. (The split search times the kernel
  // winner afresh; on a noisy machine that time, set against the kernel search's default,
  // would report a kept default as slower than itself.)
  if (split.config.split_k && split.default_seconds > 0)
    r.seconds *= split.seconds / split.default_seconds;
  r.config = std::move(split.config);
  r.tried += split.tried;
  r.untried += split.untried;
  for (auto& rejected : split.rejected) r.rejected.push_back(std::move(rejected));
  return r;
}

}  // namespace vkf::tune
