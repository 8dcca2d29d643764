#include "bench/tune/matmul_tuner.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <set>

#include "bench/tune/matmul_candidates.h"
#include "bench/tune/search.h"
#include "engine/error.h"
#include "engine/ops/matmul.h"

namespace vkf::tune {
namespace {

using Clock = std::chrono::steady_clock;

// The operands of one shape, allocated once for every candidate.
struct Operands {
  Buffer a, b, c;
};

Operands allocate(Device& dev, const ops::MatmulProblem& p) {
  const uint64_t es = dtype_bytes(p.dtype);
  Operands o{dev.allocate(uint64_t(p.m) * p.k * es, "tuner A"),
             dev.allocate(uint64_t(p.k) * p.n * es, "tuner B"),
             dev.allocate(uint64_t(p.m) * p.n * es, "tuner C")};
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
  ops::MatmulArgs args;
  args.a = o.a;
  args.b = o.b;
  args.c = o.c;
  args.m = p.m, args.n = p.n, args.k = p.k;
  args.trans_a = p.trans_a;
  args.trans_b = p.trans_b;
  args.dtype = p.dtype;
  args.config = &cfg;
  Recorder rec(dev, timer.recorder_options(dev));
  ops::matmul(dev, rec, args);
  Sequence seq = rec.finish();
  return timer.seconds(seq, cfg.describe(), ops::matmul_shape_class(p), give_up_above);
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
  SearchResult<ops::MatmulConfig> found = search(space, options, deadline, step);
  r.config = std::move(found.config);
  r.default_seconds = found.default_seconds;
  r.seconds = found.seconds;
  r.tried = found.tried;
  r.untried = found.untried;
  r.rejected = std::move(found.rejected);
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
                           std::chrono::duration<double>(std::max(mine, 0.0)));
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
