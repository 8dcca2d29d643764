#include "tune/matmul_tuner.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <set>

#include "engine/error.h"
#include "engine/ops/matmul.h"
#include "tune/matmul_candidates.h"
#include "tune/search.h"

namespace vkf::tune {
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

TuningFile tune_matmuls(Device& dev, std::span<const ops::MatmulProblem> shapes, Timer& timer,
                        const TunerOptions& options) {
  TuningFile f;
  f.key = TuningKey::of(dev.info());
  std::vector<ops::MatmulProblem> one_per_class;
  std::set<std::string> classes;
  for (const ops::MatmulProblem& p : shapes)
    if (classes.insert(ops::matmul_shape_class(p)).second) one_per_class.push_back(p);
  const Clock::time_point start = Clock::now();
  const double per_shape =
      options.budget_seconds / double(std::max<size_t>(one_per_class.size(), 1));
  for (size_t s = 0; s < one_per_class.size(); ++s) {
    // A shape finished early leaves its time to the rest.
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double left = options.budget_seconds - elapsed;
    const double mine = std::max(per_shape, left / double(one_per_class.size() - s));
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::clamp(mine, 0.0, 366.0 * 24 * 3600)));
    const std::string cls = ops::matmul_shape_class(one_per_class[s]);
    auto step = [&](size_t i, size_t n, const std::string& best) {
      if (!options.progress) return;
      Progress pr{s, one_per_class.size(), i, n, cls, best, 0};
      // By candidates, or by the budget where that is further, but never past this shape.
      const double by_time =
          std::chrono::duration<double>(Clock::now() - start).count() / options.budget_seconds;
      const double by_count =
          (double(s) + double(i) / double(std::max<size_t>(n, 1))) / double(one_per_class.size());
      pr.fraction =
          std::max(by_count, std::min(by_time, double(s + 1) / double(one_per_class.size())));
      options.progress(pr);
    };
    f.matmul.push_back(tune_matmul(dev, one_per_class[s], timer, options, deadline, step));
  }
  if (options.progress) {
    Progress done{one_per_class.size(), one_per_class.size(), 0, 0, "", "", 1.0};
    options.progress(done);
  }
  return f;
}

}  // namespace vkf::tune
