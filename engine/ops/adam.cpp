#include "engine/ops/adam.h"

#include <algorithm>
#include <string>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/elementwise.h"
#include "engine/step_scalars.h"
#include "engine/tuning.h"

namespace vkf::ops {

namespace {
void need_bytes(const BufferRef& b, uint64_t bytes, const std::string& what) {
  if (!b.valid()) throw Error(what + " is missing");
  if (b.size < bytes)
    throw Error(what + ": needs " + std::to_string(bytes) + " bytes but its buffer has " +
                std::to_string(b.size));
}
uint32_t first_pass_groups(uint32_t n, uint32_t wg, uint32_t max_groups) {
  return std::clamp<uint32_t>(ceil_div(n, wg), 1, std::max<uint32_t>(1, max_groups));
}
}  // namespace

uint64_t grad_norm_partials_bytes(const GradNormArgs& a) {
  uint32_t wg = a.workgroup_size ? a.workgroup_size : 256;
  uint64_t pairs = 0;
  for (const GradSpan& g : a.grads) pairs += first_pass_groups(g.n, wg, a.max_groups);
  return pairs * 8;
}

void grad_norm(Device& dev, Recorder& rec, const GradNormArgs& a) {
  if (a.grads.empty()) throw Error("grad_norm: no gradient buffers");
  if (a.max_groups > 65535) throw Error("grad_norm: max_groups above 65535");
  uint32_t wg = resolve_workgroup_size(dev, a.workgroup_size, "grad_norm");
  need_bytes(a.partials, grad_norm_partials_bytes(a), "grad_norm partials");
  need_bytes(a.out, sizeof(GradNormResult), "grad_norm out");
  uint32_t first = 0;
  for (size_t i = 0; i < a.grads.size(); ++i) {
    const GradSpan& g = a.grads[i];
    if (g.n == 0) throw Error("grad_norm: gradient buffer " + std::to_string(i) + " is empty");
    need_bytes(g.grads, uint64_t{g.n} * 4, "grad_norm gradient buffer " + std::to_string(i));
    uint32_t groups = first_pass_groups(g.n, wg, a.max_groups);
    struct {
      uint32_t n, first_partial;
    } push{g.n, first};
    const Kernel& k = dev.kernel({"grad_norm", 2, sizeof push, {wg}});
    // The whole scratch is bound (a slice's offset might break the descriptor alignment) and the
    // kernel writes at absolute pair indices; several buffers then cost a barrier each.
    rec.dispatch(k, {in(g.grads), out(a.partials)}, push, {groups, 1, 1});
    first += groups;
  }
  uint32_t count = first;
  const Kernel& k = dev.kernel({"grad_norm_final", 2, sizeof count, {wg}});
  rec.dispatch(k, {in(a.partials), out(a.out)}, count, {1, 1, 1});
}

std::string adam_shape_class(const AdamProblem& p) {
  const uint32_t n = p.n;
  return std::string("f32/n") + (n <= (1u << 16)   ? "64k"
                                 : n <= (1u << 20) ? "1m"
                                 : n <= (1u << 24) ? "16m"
                                                   : "big");
}

uint32_t choose_adam_workgroup(const Device& dev, const AdamProblem& p, std::string* why) {
  constexpr uint32_t k_default = 256;
  std::string passed_over;
  if (const Tuning* t = dev.tuning()) {
    const std::string cls = adam_shape_class(p);
    if (auto it = t->adam.find(cls); it != t->adam.end()) {
      const uint32_t wg = it->second;
      if (wg && (wg & (wg - 1)) == 0 && wg <= dev.info().max_workgroup_invocations &&
          wg <= dev.info().max_workgroup_size[0]) {
        if (why) *why = "tuned for " + cls + " (wg" + std::to_string(wg) + ", " + t->origin + ")";
        return wg;
      }
      passed_over = "; the tuned wg" + std::to_string(wg) + " for " + cls +
                    " was passed over: not a power of two the device runs";
    }
  }
  if (why) *why = "default: wg" + std::to_string(k_default) + passed_over;
  return k_default;
}

void adam(Device& dev, Recorder& rec, const AdamArgs& a) {
  const std::string op = "adam over " + std::to_string(a.n) + " parameters";
  if (a.n == 0) throw Error(op + ": no parameters");
  const AdamOptions& o = a.options;
  for (const auto& [b, what] : {std::pair{a.params, "params"}, std::pair{a.grads, "grads"},
                                std::pair{a.m, "m"}, std::pair{a.v, "v"}})
    need_bytes(b, uint64_t{a.n} * 4, op + " " + what);
  need_bytes(a.step, sizeof(StepScalars), op + " step scalars");
  bool clip = o.max_grad_norm > 0.0f;
  bool need_norm = clip || o.skip_nonfinite;
  if (need_norm) need_bytes(a.grad_norm, sizeof(GradNormResult), op + " grad_norm");
  if (!(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps >= 0))
    throw Error(op + ": betas must be in [0, 1) and eps >= 0");
  if (o.schedule == LrSchedule::noam && !(o.d_model > 0 && o.warmup_steps > 0))
    throw Error(op + ": the schedule needs d_model > 0 and warmup_steps > 0");
  uint32_t wg = resolve_workgroup_size(
      dev, a.workgroup_size ? a.workgroup_size : choose_adam_workgroup(dev, {a.n}), "adam");
  struct {
    uint32_t n, flags;
    float lr, d_model, warmup, beta1, beta2, eps, weight_decay, max_norm;
  } push{
      a.n,
      (o.schedule == LrSchedule::noam ? 1u : 0u) | (clip ? 2u : 0u) | (o.skip_nonfinite ? 4u : 0u),
      o.lr,
      o.d_model,
      o.warmup_steps,
      o.beta1,
      o.beta2,
      o.eps,
      o.weight_decay,
      o.max_grad_norm};
  const Kernel& k = dev.kernel({"adam", 6, sizeof push, {wg}});
  // Without clipping or the non-finite check binding 5 is never read; the step buffer stands in.
  const BufferRef& norm = need_norm ? a.grad_norm : a.step;
  rec.dispatch(k, {inout(a.params), in(a.grads), inout(a.m), inout(a.v), in(a.step), in(norm)},
               push, groups_1d(a.n, wg));
}

}  // namespace vkf::ops
