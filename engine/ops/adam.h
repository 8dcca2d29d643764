#pragma once
// Adam/AdamW with the learning-rate schedule computed on the device from StepScalars, and the
// deterministic global gradient norm (with a non-finite flag) it uses for clipping.
// Kernels: shaders/adam.comp, grad_norm.comp, grad_norm_final.comp.
#include <cstdint>
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
  uint32_t workgroup_size = 0;  // 0 = 256
};
void adam(Device& dev, Recorder& rec, const AdamArgs& a);

// Adam's tuned dimension is its workgroup size (memory-bound, one element an invocation: on
// Mesa 22.3's lavapipe 1024 ran 1.55x faster than 256). Shape classes: the parameter count
// rounded up to a bucket (64k, 1m, 16m, big).
struct AdamProblem {
  uint32_t n = 0;
};
std::string adam_shape_class(const AdamProblem& p);
// The workgroup size adam() runs when AdamArgs::workgroup_size is 0: the device's tuning for the
// class where the device can run it, else 256; `why` says which (may be null).
uint32_t choose_adam_workgroup(const Device& dev, const AdamProblem& p, std::string* why = nullptr);

}  // namespace vkf::ops
