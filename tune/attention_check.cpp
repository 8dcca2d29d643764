#include "tune/attention_check.h"

#include <random>

#include "engine/error.h"
#include "reference/attention_case.h"

namespace vkf::tune {

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

}  // namespace vkf::tune
