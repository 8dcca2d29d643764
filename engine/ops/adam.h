#pragma once
// Adam/AdamW with the learning-rate schedule computed on the device from StepScalars, and the
// deterministic global gradient norm (with a non-finite flag) it uses for clipping.
// Kernels: shaders/adam.comp, grad_norm.comp, grad_norm_final.comp.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::ops {

// What grad_norm writes (16 bytes); adam reads it.
struct GradNormResult {
  float sum_squares = 0;   // of the raw gradient (before StepScalars.grad_scale)
  float norm = 0;          // sqrt(sum_squares)
  uint32_t nonfinite = 0;  // 1 when any element is NaN/Inf or the sum overflowed
  uint32_t reserved = 0;
};
static_assert(sizeof(GradNormResult) == 16);

struct GradSpan {
  BufferRef grads;  // [n] f32
  uint32_t n = 0;
};
struct GradNormArgs {
  std::vector<GradSpan> grads;  // one or more gradient buffers, one norm over all of them
  BufferRef partials;           // grad_norm_partials_bytes(...) bytes of scratch
  BufferRef out;                // GradNormResult
  uint32_t workgroup_size = 0;  // 0 = 256; power of two
  uint32_t max_groups = 1024;   // first-pass workgroups per buffer (fixes the summation order)
};
uint64_t grad_norm_partials_bytes(const GradNormArgs& a);
void grad_norm(Device& dev, Recorder& rec, const GradNormArgs& a);

enum class LrSchedule : uint32_t {
  constant = 0,  // lr = lr * lr_scale
  noam = 1,      // lr = lr * lr_scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
};

struct AdamOptions {
  float beta1 = 0.9f;
  float beta2 = 0.98f;
  float eps = 1e-9f;
  LrSchedule schedule = LrSchedule::noam;
  float lr = 1.0f;         // the constant rate, or the schedule's factor
  float d_model = 512.0f;  // schedule only
  float warmup_steps = 4000.0f;
  float weight_decay = 0.0f;   // decoupled (AdamW); 0 = plain Adam
  float max_grad_norm = 0.0f;  // clip the (scaled) global norm to this; 0 = no clipping
  bool skip_nonfinite = true;  // leave w, m, v untouched when the gradient has NaN/Inf
};

// How adam() runs: memory-bound, a few flops an element, so what matters is how a device
// schedules the invocations and reads the four streams.
struct AdamConfig {
  uint32_t workgroup_size = 256;  // power of two
  // Elements an invocation updates (1, 2, 4 or 8), `threads` apart so that neighbouring
  // invocations touch neighbouring elements each time. The per-step scalars (learning rate,
  // clipping, bias corrections) are computed once per invocation: a CPU device runs them for
  // every invocation, a GPU hides them.
  uint32_t elems = 1;
  // texel: w, g, m and v are read through uniform texel views, and w, m, v written through
  // storage bindings over the same memory (each element is read, then written, by one
  // invocation). Where a buffer cannot be viewed (its offset or size: texel_view_misfit), a
  // tuned or default choice falls back to storage; a forced one is an error.
  enum class Reads { storage, texel } reads = Reads::storage;
  bool operator==(const AdamConfig&) const = default;
};
std::string describe(const AdamConfig& c);  // "wg256 x4 texel"
// Why the device cannot run `c` ("" when it can).
std::string adam_config_misfit(const DeviceInfo& info, const AdamConfig& c);

// One update of w from grads (scaled by StepScalars.grad_scale), step = StepScalars.step
// (1-based; 0 acts as 1), lr multiplied by StepScalars.lr_scale.
struct AdamArgs {
  BufferRef params;     // [n] f32, updated
  BufferRef grads;      // [n] f32
  BufferRef m;          // [n] f32, first moment (zeros at the start)
  BufferRef v;          // [n] f32, second moment (zeros at the start)
  BufferRef step;       // StepScalars
  BufferRef grad_norm;  // GradNormResult of these gradients; needed for clipping/skip_nonfinite
  uint32_t n = 0;
  AdamOptions options;
  // Forced; unset: the device's tuning for the shape class, else adam_default_config. Every
  // configuration evaluates the same expressions in the same order.
  std::optional<AdamConfig> config;
};
void adam(Device& dev, Recorder& rec, const AdamArgs& a);
// Why texel reads cannot run `a` on `info`'s device: the first of params, grads, m and v that
// no R32F texel view can cover, and why (texel_view_misfit); "" when every one can.
std::string adam_texel_misfit(const DeviceInfo& info, const AdamArgs& a);

// Shape classes: the parameter count rounded up to a bucket (64k, 1m, 16m, big).
struct AdamProblem {
  uint32_t n = 0;
};
std::string adam_shape_class(const AdamProblem& p);
// The prior: wg256, four elements an invocation; storage reads on a GPU, texel reads on a CPU
// device (measured on three lavapipe drivers and an H200: docs/performance.md).
AdamConfig adam_default_config(const DeviceInfo& info);
// What adam() runs when AdamArgs::config is unset: the device's tuning for the class where the
// device can run it, else the default; `why` says which (may be null).
AdamConfig choose_adam_config(const Device& dev, const AdamProblem& p, std::string* why = nullptr);

// The Adam family as the tuning file and the tuner know it (engine/ops/tuned_families.h).
struct AdamFamily {
  using Problem = AdamProblem;
  using Work = AdamProblem;
  using Config = AdamConfig;
  static constexpr const char* name = "adam";
  static constexpr const char* title = "Adam";
  static std::string shape_class(const Problem& p) { return adam_shape_class(p); }
  static std::string describe(const Config& c) { return ops::describe(c); }
  static std::string dims(const Problem& p) { return std::to_string(p.n); }
  static nlohmann::json problem_json(const Problem& p);
  static Problem problem_of(const nlohmann::json& j);
  static nlohmann::json config_json(const Config& c);
  static Config config_of(const nlohmann::json& j);
  static std::string misfit(const DeviceInfo& info, const Config& c, const Problem&) {
    return adam_config_misfit(info, c);
  }
  // An entry from before the elements an invocation and the reads were searched (the workgroup
  // size alone, at one element through storage buffers): dropped, so that its class runs the
  // default until it is tuned again. On CPU devices that default is 1.8-2.9x the old search's
  // space (docs/performance.md).
  static bool superseded(const nlohmann::json& entry);
};

}  // namespace vkf::ops
