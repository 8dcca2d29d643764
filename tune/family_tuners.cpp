#include "tune/family_tuners.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "engine/ops/adam.h"
#include "engine/ops/attention.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/loss.h"
#include "engine/ops/topk.h"
#include "engine/step_scalars.h"
#include "reference/stored.h"
#include "tune/attention_candidates.h"
#include "tune/attention_check.h"
#include "tune/row_candidates.h"
#include "tune/row_checks.h"

namespace vkf::tune {
namespace {

// Small values (0x2c00 halves are 0.0625; the f32 pattern 0.03125): the timing does not depend
// on them, but denormals or NaN could slow a CPU device down.
void fill_small(Device& dev, std::initializer_list<const Buffer*> buffers, DType t) {
  Recorder rec(dev);
  const uint32_t bits = t == DType::f16 ? 0x2c002c00u : 0x3d000000u;
  for (const Buffer* b : buffers)
    if (b->size() >= 4) rec.fill(b->ref().slice(0, b->size() & ~VkDeviceSize(3)), bits);
  rec.finish().run();
}

double time_sequence(Device& dev, Timer& timer, const std::string& candidate,
                     const std::string& shape_class, double give_up,
                     const std::function<void(Recorder&)>& record) {
  Recorder rec(dev, timer.recorder_options(dev));
  record(rec);
  Sequence seq = rec.finish();
  return timer.seconds(seq, candidate, shape_class, give_up);
}

// The search's result as the family's tuning-file entry.
template <class P, class C>
TunedEntry<P, C> entry(const P& shape, const std::string& cls, const std::string& default_name,
                       SearchResult<C> found) {
  TunedEntry<P, C> r;
  r.shape_class = cls;
  r.shape = shape;
  r.config = std::move(found.config);
  r.default_name = default_name;
  r.default_seconds = found.default_seconds;
  r.seconds = found.seconds;
  r.tried = found.tried;
  r.untried = found.untried;
  r.rejected = std::move(found.rejected);
  return r;
}

}  // namespace

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
  return entry(p, cls, ops::describe(space.candidates.front()),
               search(space, options, deadline, step));
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
  return entry(p, cls, ops::describe(space.candidates.front()),
               search(space, options, deadline, step));
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
  return entry(p, cls, ops::describe(space.candidates.front()),
               search(space, options, deadline, step));
}

TunedTopK tune_topk(Device& dev, const ops::TopKProblem& p, Timer& timer,
                    const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                    const StepReport& step) {
  const std::string cls = ops::topk_shape_class(p);
  const uint64_t n = uint64_t(p.rows) * p.n;
  Buffer values = dev.allocate(n * dtype_bytes(p.dtype), "tuner values"),
         top_v = dev.allocate(uint64_t{p.rows} * p.k * 4, "tuner top values"),
         top_i = dev.allocate(uint64_t{p.rows} * p.k * 4, "tuner top indices");
  // Logit-like values: all-equal ones would time the worst case of both paths (no entry below
  // the k-th), not what decoding sees.
  std::mt19937 rng(p.n);
  ref::upload_stored(dev, values, ref::random_stored(rng, n, p.dtype, -20.0f, 0.0f), p.dtype);
  SearchSpace<ops::TopKConfig> space;
  space.candidates = topk_candidates(dev.info(), p);
  uint64_t scratch_bytes = 16;
  for (const ops::TopKConfig& c : space.candidates)
    scratch_bytes = std::max(scratch_bytes, ops::topk_scratch_bytes(p.rows, p.n, p.k, c, true));
  Buffer scratch = dev.allocate(scratch_bytes, "tuner top-k scratch");
  // Timed as decoding runs it: the top-k of logits with their log-softmax.
  space.describe = [](const ops::TopKConfig& c) { return ops::describe(c); };
  space.time = [&](const ops::TopKConfig& c, double give_up) {
    return time_sequence(dev, timer, ops::describe(c), cls, give_up, [&](Recorder& rec) {
      ops::topk(dev, rec,
                {.dtype = p.dtype,
                 .values = values,
                 .out_values = top_v,
                 .out_indices = top_i,
                 .scratch = scratch,
                 .rows = p.rows,
                 .n = p.n,
                 .k = p.k,
                 .config = c,
                 .log_softmax = true});
    });
  };
  space.check = [&](const ops::TopKConfig& c) { return check_topk(dev, c, p, options.sabotage); };
  return entry(p, cls, ops::describe(space.candidates.front()),
               search(space, options, deadline, step));
}

TunedAdam tune_adam(Device& dev, const ops::AdamProblem& p, Timer& timer,
                    const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                    const StepReport& step) {
  const std::string cls = ops::adam_shape_class(p);
  const uint32_t n = std::min(p.n, 16u << 20);
  Buffer w = dev.allocate(uint64_t{n} * 4, "tuner w"), g = dev.allocate(uint64_t{n} * 4, "tuner g"),
         m = dev.allocate(uint64_t{n} * 4, "tuner m"), v = dev.allocate(uint64_t{n} * 4, "tuner v"),
         norm = dev.allocate(16, "tuner norm"),
         stepb = dev.allocate(sizeof(StepScalars), "tuner step", MemoryKind::host);
  StepScalars st;
  std::memcpy(stepb.mapped(), &st, sizeof st);
  fill_small(dev, {&w, &g, &m, &v}, DType::f32);
  dev.upload(norm, std::vector<uint32_t>{0, 0, 0, 0});
  SearchSpace<ops::AdamConfig> space;
  space.candidates = adam_candidates(dev.info(), n);
  space.describe = [](const ops::AdamConfig& c) { return ops::describe(c); };
  space.time = [&](const ops::AdamConfig& c, double give_up) {
    return time_sequence(dev, timer, space.describe(c), cls, give_up, [&](Recorder& rec) {
      ops::adam(dev, rec,
                {.params = w,
                 .grads = g,
                 .m = m,
                 .v = v,
                 .step = stepb,
                 .grad_norm = norm,
                 .n = n,
                 .config = c});
    });
  };
  space.check = [&](const ops::AdamConfig& c) { return check_adam(dev, c, options.sabotage); };
  return entry(p, cls, space.describe(space.candidates.front()),
               search(space, options, deadline, step));
}

}  // namespace vkf::tune
