#pragma once
// What the Transformer's blocks (this directory) share. Each block resolves its parameters once,
// when it is built, from a ParamSource (with their gradients when training); its forward
// returns a struct of what it saved, and its backward, beside it in the same file, takes that
// struct. So the backward never looks an activation up by name (CTranslate2's
// include/ctranslate2/layers/transformer.h is the model: blocks with their weights resolved and
// one call each).
#include <cstdint>
#include <string>

#include "model/device_params.h"
#include "model/layers.h"

namespace vkf::model {

// Where a block finds its parameters: the weights, and when training their gradients.
struct ParamSource {
  const DeviceWeights& weights;
  const DeviceParams* training = nullptr;  // null: inference (no gradients)

  const ModelConfig& config() const { return weights.config(); }
  BufferRef param(const std::string& name) const { return weights.param(name); }
  BufferRef grad(const std::string& name) const {
    return training ? training->grad(name) : BufferRef{};
  }
  // prefix.weight [out, in] and prefix.bias [out], with their gradients when training.
  Linear linear(const std::string& prefix, uint32_t in, uint32_t out) const;
};

// What every backward records into. Parameter gradients are accumulated (+=); the activation
// gradients of a block go to temporaries shared by every block (the recorder orders their
// reuse), sized for the most rows of the graph.
struct Backward {
  Device& dev;
  Recorder& rec;
  BufferRef scalars;             // StepScalars (the dropout masks are drawn again from them)
  BufferRef ones;                // [rows] of 1.0: a bias gradient is ones^T dy
  BufferRef d_q, d_k, d_v, d_o;  // attention: gradients of the projections
  BufferRef d_ff;                // feed-forward: gradient of the hidden activation
  BufferRef delta;               // attention backward workspace, [batch, heads, len_q]
  BufferRef ln_scratch;          // layer norm backward workspace
  BufferRef split_k;             // the gradient matmuls' split-k workspace (MatmulArgs::workspace)
  // Storage of the activation gradients (and `ones`): f16 in mixed-precision training, where the
  // weight gradients the matmuls accumulate are fp16 too (DeviceParams::grad).
  DType dtype = DType::f32;
  // The first `elements` values of an activation-gradient temporary.
  BufferRef part(const BufferRef& b, uint64_t elements) const {
    return b.slice(0, elements * dtype_bytes(dtype));
  }
};

// y[rows, out] = x[rows, in] W^T + b (then ReLU), split in k where f gives a workspace, in its
// part `part` (Forward::split_k_part).
void linear_forward(const Forward& f, const Linear& l, const BufferRef& x, const BufferRef& y,
                    uint32_t rows, bool relu = false, uint32_t part = 0);

// Given dy [rows, out]: dx (= or +=) dy W; l.dweight += dy^T x; l.dbias += ones^T dy.
void linear_backward(const Backward& b, const Linear& l, const BufferRef& x, const BufferRef& dy,
                     const BufferRef& dx, bool accumulate_dx, uint32_t rows);

}  // namespace vkf::model
