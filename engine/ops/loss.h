#pragma once
// Label-smoothed cross-entropy over the vocabulary (loss, log p(target), gradient w.r.t. the
// logits in one kernel), its deterministic totals, and the plain log-softmax for decoding.
// Kernels: shaders/cross_entropy.comp, cross_entropy_total.comp, log_softmax.comp (and its
// log_sum_exp variants).
// With dtype f16 the [rows, vocab] tensors (logits, dlogits; log-softmax x, y) are stored as fp16
// (devices with 16-bit storage); the per-row outputs and all arithmetic stay fp32.
#include <cstdint>

#include "engine/device.h"
#include "engine/ops/elementwise.h"
#include "engine/recorder.h"

namespace vkf::ops {

// Per row r with target t (see cross_entropy.comp for the derivation):
//   row_loss[r] = -(1 - eps) log p_t - eps / V sum_v log p_v,  row_logp[r] = log p_t,
//   dlogits[r, v] = (p_v - (1 - eps) [v == t] - eps / V) * StepScalars.grad_scale.
// Rows whose target is pad_id (or outside [0, vocab)) give 0, 0 and a zero gradient row.
// For `vkf score` run it with label_smoothing 0 and no dlogits and sum row_logp per sentence.
struct CrossEntropyArgs {
  DType dtype = DType::f32;  // storage of logits and dlogits: f32 or f16
  BufferRef logits;          // [rows, vocab] of dtype
  BufferRef targets;         // [rows] i32
  BufferRef step;            // StepScalars (grad_scale); may be omitted without dlogits
  BufferRef row_loss;        // [rows] f32 out
  BufferRef row_logp;        // [rows] f32 out
  BufferRef dlogits;  // [rows, vocab] of dtype, out; may be `logits` (in place); invalid = none
  uint32_t rows = 0;
  uint32_t vocab = 0;
  int32_t pad_id = 0;
  float label_smoothing = 0.0f;  // eps in [0, 1)
  RowKernelConfig config;
};
void cross_entropy(Device& dev, Recorder& rec, const CrossEntropyArgs& a);

// Totals over rows in a fixed order: a 16-byte result {loss sum f32, log p sum f32, tokens u32, 0}.
struct CrossEntropyTotals {
  float loss_sum = 0;
  float logp_sum = 0;
  uint32_t tokens = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(CrossEntropyTotals) == 16);
struct CrossEntropyTotalArgs {
  BufferRef row_loss;  // [rows] f32, from cross_entropy
  BufferRef row_logp;  // [rows] f32
  BufferRef targets;   // [rows] i32 (to count the non-pad rows)
  BufferRef out;       // CrossEntropyTotals
  uint32_t rows = 0;
  uint32_t vocab = 0;
  int32_t pad_id = 0;
  uint32_t workgroup_size = 0;  // 0 = 256
};
void cross_entropy_total(Device& dev, Recorder& rec, const CrossEntropyTotalArgs& a);

// y[r, :] = log_softmax(x[r, :]); y may be x (in place).
struct LogSoftmaxArgs {
  DType dtype = DType::f32;  // storage of x and y: f32 or f16
  BufferRef x;               // [rows, cols] of dtype
  BufferRef y;               // [rows, cols] of dtype
  uint32_t rows = 0;
  uint32_t cols = 0;
  RowKernelConfig config;
};
void log_softmax(Device& dev, Recorder& rec, const LogSoftmaxArgs& a);

// lse[r] = log sum_v exp(x[r, v]): log_softmax's first read alone (x[r, v] - lse[r] is the
// log-probability), for a consumer that needs a few entries of a row, not all of it (top-k).
struct LogSumExpArgs {
  DType dtype = DType::f32;  // storage of x: f32 or f16
  BufferRef x;               // [rows, cols] of dtype
  BufferRef lse;             // [rows] f32
  uint32_t rows = 0;
  uint32_t cols = 0;
  RowKernelConfig config;
};
void log_sum_exp(Device& dev, Recorder& rec, const LogSumExpArgs& a);

}  // namespace vkf::ops
