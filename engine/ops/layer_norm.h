#pragma once
// LayerNorm forward and backward, optionally fused with a residual add and dropout (post-LN:
// y = LayerNorm(x + dropout(s)) * gamma + beta). Rows are normalised over their d columns.
// Kernels: shaders/layer_norm_forward.comp, layer_norm_backward.comp, layer_norm_dparams_*.comp.
// With dtype f16 the [rows, d] activations and their gradients are stored as fp16 (devices with
// 16-bit storage); gamma, beta, mean, rstd, dgamma, dbeta and all arithmetic stay fp32.
#include <cstdint>

#include "engine/device.h"
#include "engine/ops/elementwise.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

// How a row is summed: a workgroup per row through shared memory, or subgroup adds then shared
// memory; or a subgroup per row with no barriers (small rows; CPU devices, where barriers are
// dear).
enum class RowReduce { automatic, shared, subgroup, subgroup_rows };

struct LayerNormForwardArgs {
  DType dtype = DType::f32;  // storage of x, s, y and h: f32 or f16
  BufferRef x;               // [rows, d] residual input (plain mode: the input)
  BufferRef s;               // [rows, d] sublayer output; invalid = plain mode, h = x
  BufferRef gamma;           // [d]
  BufferRef beta;            // [d]
  BufferRef y;               // [rows, d] output
  BufferRef h;               // [rows, d] x + dropout(s), saved for the backward; residual mode only
  BufferRef mean;            // [rows] saved for the backward
  BufferRef rstd;            // [rows] 1 / sqrt(var + eps), saved for the backward
  BufferRef step;            // StepScalars (seed, step); needed only when dropout > 0
  uint32_t rows = 0;
  uint32_t d = 0;
  float eps = 1e-6f;
  float dropout = 0.0f;    // probability of dropping an element of s
  uint32_t tensor_id = 0;  // dropout stream of s (same value in the backward)
  // Rows per batch row when the rows are sentences of this many tokens: the mask is then that of
  // the rows' place in the step's whole batch, from StepScalars::dropout_row (data-parallel
  // shares). 0: no offset.
  uint32_t batch_row_rows = 0;
  // Tuning, normally left to the device: 0 = pick; else a power of two.
  uint32_t workgroup_size = 0;
  RowReduce reduce = RowReduce::automatic;
  // x, s, gamma and beta through texel views or storage buffers (RowKernelConfig::Reads).
  // Forced texel reads are an error where a view does not fit a buffer; automatic ones (the
  // default or the tuning) fall back to the storage buffers there.
  RowKernelConfig::Reads reads = RowKernelConfig::Reads::automatic;
};

struct LayerNormBackwardArgs {
  DType dtype = DType::f32;  // storage of dy, h, dx and ds: f32 or f16, as in the forward
  BufferRef dy;              // [rows, d] gradient of y
  BufferRef h;               // [rows, d] the forward's h (plain mode: its x)
  BufferRef gamma;           // [d]
  BufferRef mean;            // [rows] from the forward
  BufferRef rstd;            // [rows] from the forward
  BufferRef dx;              // [rows, d] gradient of x (= dh), written or accumulated
  BufferRef ds;              // [rows, d] gradient of s (= dh * mask); invalid = plain mode
  BufferRef dgamma;          // [d] written or accumulated
  BufferRef dbeta;           // [d] written or accumulated
  BufferRef scratch;         // layer_norm_backward_scratch_bytes(rows, d) bytes
  BufferRef step;  // StepScalars, as in the forward; needed only when dropout > 0 and ds is valid
  uint32_t rows = 0;
  uint32_t d = 0;
  float dropout = 0.0f;            // as in the forward
  uint32_t tensor_id = 0;          // as in the forward
  uint32_t batch_row_rows = 0;     // as in the forward
  bool accumulate_dx = false;      // dx += dh (another branch already wrote dx)
  bool accumulate_params = false;  // dgamma += ..., dbeta += ...
  uint32_t workgroup_size = 0;
  RowReduce reduce = RowReduce::automatic;
  RowKernelConfig::Reads reads = RowKernelConfig::Reads::automatic;  // dy, h and gamma, as above
};

void layer_norm_forward(Device& dev, Recorder& rec, const LayerNormForwardArgs& a);
void layer_norm_backward(Device& dev, Recorder& rec, const LayerNormBackwardArgs& a);

// Rows summed per partial of dgamma/dbeta: a function of the shape only, so the summation order
// (and the result) does not depend on the device.
uint32_t layer_norm_rows_per_part(uint32_t rows);
uint64_t layer_norm_backward_scratch_bytes(uint32_t rows, uint32_t d);

}  // namespace vkf::ops
