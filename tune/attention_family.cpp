#include "tune/attention_family.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/error.h"
#include "engine/ops/attention.h"
#include "reference/attention_case.h"

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

std::string check_attention(Device& dev, const ops::AttentionTiles& candidate,
                            const ops::AttentionProblem& p, const Sabotage& sabotage) {
  ref::AttentionCase c;
  c.dtype = p.dtype;
  ref::AttentionShape& s = c.s;
  s.batch = 2, s.heads = 2, s.d_k = int(p.d_k), s.d_v = int(p.d_v), s.causal = p.causal;
  // Self-attention lengths where the mask is causal, cross-attention ones elsewhere.
  s.len_k = 37;
  s.len_q = p.causal ? 37 : 23;
  s.key_len = {37, 31};
  std::mt19937 rng(p.d_k * 31 + p.d_v + (p.causal ? 7 : 0));
  const ref::AttentionRun run(dev, c, rng);
  // The candidate at its own kernel; the others as an untuned run would have them.
  ops::AttentionBackwardArgs g = run.backward_args();
  switch (p.kernel) {
    case ops::AttentionKernel::forward:
      g.fwd.tiles = candidate;
      break;
    case ops::AttentionKernel::backward_kv:
      g.tiles_kv = candidate;
      break;
    case ops::AttentionKernel::backward_q:
      g.tiles_q = candidate;
      break;
  }
  try {
    Recorder rec(dev);
    run.poison(rec);
    ops::attention_forward(dev, rec, g.fwd);
    ops::attention_backward(dev, rec, g);
    if (sabotage && sabotage(ops::describe(candidate))) run.corrupt(rec, p.kernel);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }

  const ref::AttentionTolerance tol = ref::attention_tolerance(p.dtype);
  for (const std::vector<ref::Comparison>& checked :
       {run.compare_forward(tol), run.compare_backward(tol)})
    for (const ref::Comparison& cmp : checked)
      if (!cmp.ok())
        return "wrong at element " + std::to_string(cmp.worst_index()) + ": " + cmp.describe() +
               " (" + ops::attention_shape_class(p) + " check, 2x2 heads, 23-37 rows)";
  return "";
}

TunedAttention tune_attention(Device& dev, const AttentionWork& w, Timer& timer,
                              const TunerOptions& options,
                              std::chrono::steady_clock::time_point deadline,
                              const StepReport& step) {
  const ops::AttentionProblem& p = w.problem;
  const std::string cls = ops::attention_shape_class(p);
  const DType t = p.dtype;
  const uint64_t es = dtype_bytes(t), heads = uint64_t(w.batch) * w.heads;
  Buffer q = dev.allocate(heads * p.len_q * p.d_k * es, "tuner q"),
         k = dev.allocate(heads * p.len_k * p.d_k * es, "tuner k"),
         v = dev.allocate(heads * p.len_k * p.d_v * es, "tuner v"),
         o = dev.allocate(heads * p.len_q * p.d_v * es, "tuner o"),
         d_o = dev.allocate(heads * p.len_q * p.d_v * es, "tuner d_o"),
         d_q = dev.allocate(heads * p.len_q * p.d_k * es, "tuner d_q"),
         d_k = dev.allocate(heads * p.len_k * p.d_k * es, "tuner d_k"),
         d_v = dev.allocate(heads * p.len_k * p.d_v * es, "tuner d_v"),
         lse = dev.allocate(heads * p.len_q * 4, "tuner lse"),
         delta = dev.allocate(heads * p.len_q * 4, "tuner delta");
  fill_small(dev, {&q, &k, &v, &d_o}, t);
  ops::AttentionBackwardArgs g;
  ops::AttentionArgs& a = g.fwd;
  a.batch = w.batch, a.heads = w.heads, a.len_q = p.len_q, a.len_k = p.len_k;
  a.d_k = p.d_k, a.d_v = p.d_v, a.dtype = t, a.causal = p.causal;
  a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse;
  g.d_o = d_o, g.d_q = d_q, g.d_k = d_k, g.d_v = d_v, g.delta = delta;
  {  // O and the log-sum-exp the backward reads.
    Recorder rec(dev);
    ops::attention_forward(dev, rec, a);
    rec.finish().run();
  }
  SearchSpace<ops::AttentionTiles> space;
  space.candidates = attention_candidates(dev.info(), p);
  space.describe = [](const ops::AttentionTiles& c) { return ops::describe(c); };
  space.time = [&](const ops::AttentionTiles& c, double give_up) {
    ops::AttentionBackwardArgs x = g;
    if (p.kernel == ops::AttentionKernel::forward) x.fwd.tiles = c;
    if (p.kernel == ops::AttentionKernel::backward_kv) x.tiles_kv = c;
    if (p.kernel == ops::AttentionKernel::backward_q) x.tiles_q = c;
    return time_sequence(dev, timer, ops::describe(c), cls, give_up, [&](Recorder& rec) {
      if (p.kernel == ops::AttentionKernel::forward)
        ops::attention_forward(dev, rec, x.fwd);
      else
        ops::attention_backward(dev, rec, x);
    });
  };
  space.check = [&](const ops::AttentionTiles& c) {
    return check_attention(dev, c, p, options.sabotage);
  };
  return tuned_entry<ops::AttentionFamily>(p, ops::describe(space.candidates.front()),
                                           search(space, options, deadline, step));
}

}  // namespace vkf::tune
