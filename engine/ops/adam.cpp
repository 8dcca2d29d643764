#include "engine/ops/adam.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/error.h"
#include "engine/json_limits.h"
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
  // The default workgroup is 256 or, on a device that allows fewer invocations, as few as 128
  // (resolve_workgroup_size): room for the smaller one's partials, which are more.
  uint32_t wg = a.workgroup_size ? a.workgroup_size : 128;
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

std::string describe(const AdamConfig& c) {
  return "wg" + std::to_string(c.workgroup_size) + " x" + std::to_string(c.elems) +
         (c.reads == AdamConfig::Reads::texel ? " texel" : " storage");
}

std::string adam_config_misfit(const DeviceInfo& info, const AdamConfig& c) {
  if (std::string why = workgroup_size_misfit(info, c.workgroup_size); !why.empty()) return why;
  if (c.elems != 1 && c.elems != 2 && c.elems != 4 && c.elems != 8)
    return std::to_string(c.elems) + " elements an invocation: not 1, 2, 4 or 8";
  return "";
}

AdamConfig adam_default_config(const DeviceInfo& info) {
  // Four elements an invocation: 1.44x one on an H200 (storage), 1.5-2.4x on three lavapipe
  // drivers. Texel reads win on the CPU drivers that load storage buffers a lane at a time;
  // on a GPU they are the tuner's to find (1.05x more on the H200).
  AdamConfig c{256, 4, AdamConfig::Reads::storage};
  if (info.is_cpu()) c.reads = AdamConfig::Reads::texel;
  // Vulkan promises 128 invocations a workgroup, not 256.
  while (c.workgroup_size > 32 && (c.workgroup_size > info.max_workgroup_invocations ||
                                   c.workgroup_size > info.max_workgroup_size[0]))
    c.workgroup_size /= 2;
  return c;
}

AdamConfig choose_adam_config(const Device& dev, const AdamProblem& p, std::string* why) {
  std::string passed_over;
  if (const Tuning* t = dev.tuning()) {
    const std::string cls = adam_shape_class(p);
    const auto& table = t->of<AdamFamily>();
    if (auto it = table.find(cls); it != table.end()) {
      const std::string misfit = adam_config_misfit(dev.info(), it->second);
      if (misfit.empty()) {
        if (why) *why = "tuned for " + cls + " (" + describe(it->second) + ", " + t->origin + ")";
        return it->second;
      }
      passed_over =
          "; the tuned " + describe(it->second) + " for " + cls + " was passed over: " + misfit;
    }
  }
  const AdamConfig d = adam_default_config(dev.info());
  if (why) *why = "default: " + describe(d) + passed_over;
  return d;
}

std::string adam_texel_misfit(const DeviceInfo& info, const AdamArgs& a) {
  for (const auto& [b, what] : {std::pair{a.params, "params"}, std::pair{a.grads, "grads"},
                                std::pair{a.m, "m"}, std::pair{a.v, "v"}})
    if (std::string misfit = texel_view_misfit(info, b, VK_FORMAT_R32_SFLOAT); !misfit.empty())
      return std::string(what) + ": " + misfit;
  return "";
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
  AdamConfig c = a.config ? *a.config : choose_adam_config(dev, {a.n});
  if (const std::string misfit = adam_config_misfit(dev.info(), c); !misfit.empty())
    throw Error(op + ": " + describe(c) + ": " + misfit);
  if (c.reads == AdamConfig::Reads::texel)
    if (const std::string why = adam_texel_misfit(dev.info(), a); !why.empty()) {
      if (a.config) throw Error(op + ": texel reads were asked for, but " + why);
      c.reads = AdamConfig::Reads::storage;
    }
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
  const auto groups = groups_1d(ceil_div(a.n, c.elems), c.workgroup_size);
  // Without clipping or the non-finite check binding 5 is never read; the step buffer stands in.
  const BufferRef& norm = need_norm ? a.grad_norm : a.step;
  if (c.reads == AdamConfig::Reads::texel) {
    const VkFormat f32 = VK_FORMAT_R32_SFLOAT;
    KernelSpec spec{"adam_texel", 9, sizeof push, {c.workgroup_size, c.elems}};
    spec.texel_buffers = (1u << 1) | (1u << 6) | (1u << 7) | (1u << 8);
    rec.dispatch(dev.kernel(spec),
                 {out(a.params), in_texels(a.grads, f32), out(a.m), out(a.v), in(a.step), in(norm),
                  in_texels(a.params, f32), in_texels(a.m, f32), in_texels(a.v, f32)},
                 push, groups);
    return;
  }
  const Kernel& k = dev.kernel({"adam", 6, sizeof push, {c.workgroup_size, c.elems}});
  rec.dispatch(k, {inout(a.params), in(a.grads), inout(a.m), inout(a.v), in(a.step), in(norm)},
               push, groups);
}

nlohmann::json AdamFamily::problem_json(const Problem& p) {
  return {{"n", p.n}};
}

AdamProblem AdamFamily::problem_of(const nlohmann::json& j) {
  return {json_field<uint32_t>(j, "n")};
}

nlohmann::json AdamFamily::config_json(const Config& c) {
  return {{"workgroup_size", c.workgroup_size},
          {"elems", c.elems},
          {"reads", c.reads == AdamConfig::Reads::texel ? "texel" : "storage"}};
}

AdamConfig AdamFamily::config_of(const nlohmann::json& j) {
  AdamConfig c;
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  c.elems = json_field<uint32_t>(j, "elems");
  const std::string reads = j.at("reads").get<std::string>();
  if (reads == "texel")
    c.reads = AdamConfig::Reads::texel;
  else if (reads != "storage")
    throw Error("Adam reads '" + reads + "' is not texel or storage");
  if (!c.workgroup_size || !c.elems)
    throw Error("Adam configuration " + ops::describe(c) + " has a zero size");
  return c;
}

bool AdamFamily::superseded(const nlohmann::json& entry) {
  return !entry.at("config").contains("elems");
}

}  // namespace vkf::ops
