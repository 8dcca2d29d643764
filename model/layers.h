#pragma once
// What the Transformer's blocks (model/blocks/: attention, feed-forward, add & norm, the layers)
// are recorded with (docs/design.md: post-LN, PyTorch Linear layout): the activation pool, linear
// layers, the embedding and the context a forward records into. The training graph records the
// blocks over whole sequences; the decoder (model/decode/) for one position at a time.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/attention.h"
#include "engine/ops/matmul_choice.h"
#include "engine/recorder.h"
#include "model/device_weights.h"

namespace vkf::model {

// Activations and host-visible inputs/outputs by name. `write` allocates on first use (or reuses)
// the buffer a forward writes. The blocks (model/blocks/) hand what they saved to their backward
// as typed structs, so the training graph looks nothing up by name; a lookup that must, `read`,
// refuses a name never written (or written smaller): a misspelled name is an error, not a fresh,
// uninitialised buffer. One pool can serve the graphs of every bucket shape, which run one at a
// time, instead of one set of buffers per shape. A buffer that must grow is replaced; the old one
// stays alive for the graphs already recorded against it (record the largest shapes first to avoid
// that).
class ActivationPool {
 public:
  explicit ActivationPool(Device& dev) : dev_(dev) {}
  BufferRef write(const std::string& name, uint64_t elements);  // device-local, 4-byte elements
  BufferRef read(const std::string& name, uint64_t elements) const;  // throws if never written
  BufferRef host(const std::string& name, uint64_t elements);        // host-visible, mapped
  uint64_t bytes() const { return bytes_; }  // held, retired buffers included
  Device& device() const { return dev_; }

 private:
  BufferRef find_or_allocate(const std::string& name, uint64_t elements, MemoryKind kind);
  Device& dev_;
  std::map<std::string, Buffer> live_;
  std::vector<Buffer> retired_;
  uint64_t bytes_ = 0;
};

struct Linear {
  BufferRef weight, bias;  // weight [out, in] (PyTorch layout), bias [out]
  uint32_t in = 0, out = 0;
  DType dtype = DType::f32;  // of weight, bias and the activations they multiply (fp16 models)
  BufferRef dweight, dbias;  // their gradients when training (ParamSource::linear)
};
Linear linear_of(const DeviceWeights& p, const std::string& prefix, uint32_t in, uint32_t out);

// y[rows, out] = x[rows, in] W^T + b (then ReLU), fused in the matmul epilogue.
// `workspace`: where the matmul may split k (MatmulArgs::workspace; an invalid ref: it does not).
void linear_forward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                    const BufferRef& y, uint32_t rows, bool relu = false,
                    const BufferRef& workspace = {});
// The split-k workspace linear_forward would use for a layer of `in` -> `out` features over
// `rows` rows (ops::matmul_split_k): 0 where it does not split.
uint64_t linear_forward_workspace_bytes(const Device& dev, uint32_t in, uint32_t out, uint32_t rows,
                                        DType dtype);
// Given dy [rows, out]: dx (= or +=) dy W; dW += dy^T x; db += ones^T dy; all in l.dtype (in
// fp16 the weight gradients are fp16 too: DeviceParams drains them into fp32).
// `workspace`: where the weight and bias gradients' matmuls may split k (MatmulArgs::workspace;
// an invalid ref: they do not).
void linear_backward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                     const BufferRef& dy, const BufferRef& dx, bool accumulate_dx,
                     const BufferRef& dweight, const BufferRef& dbias, const BufferRef& ones,
                     uint32_t rows, const BufferRef& workspace = {});
// The matmul problems a Linear of `in` -> `out` features runs over `rows` rows, as
// linear_forward and linear_backward state them: y = x W^T (with a split-k workspace where
// `forward_workspace`: decoding gives one) and, training, dx = dy W and dW += dy^T x (with
// the workspace training gives it). What the model tells the tuner (model/op_problems.h).
std::vector<ops::MatmulProblem> linear_matmul_problems(uint32_t in, uint32_t out, uint32_t rows,
                                                       DType dtype, bool training,
                                                       bool forward_workspace);
// The split-k workspace linear_backward's gradient matmuls would use for a layer of `in` ->
// `out` features over `rows` rows (ops::matmul_split_k): 0 where neither splits.
uint64_t linear_backward_workspace_bytes(const Device& dev, uint32_t in, uint32_t out,
                                         uint32_t rows, DType dtype);

// A [batch, len, heads * dh] projection output seen as [batch, heads, len, dh].
ops::AttentionLayout heads_layout(uint32_t len, uint32_t heads, uint32_t dh);

// Philox tensor ids: one stream per dropout site, so no two masks coincide.
uint32_t dropout_id(bool decoder, int layer, uint32_t site);

// Device activations by name.
using BufferSource = std::function<BufferRef(const std::string& name, uint64_t elements)>;
inline BufferSource source_of(ActivationPool& b) {
  return [&b](const std::string& name, uint64_t elements) { return b.write(name, elements); };
}

// Parts of Forward::split_k: one for each of the Q, K and V projections.
constexpr uint32_t k_split_k_parts = 3;

// What every forward block records into.
struct Forward {
  Device& dev;
  Recorder& rec;
  const DeviceWeights& params;
  BufferSource buf;
  BufferRef scalars;  // StepScalars (dropout seed and step)
  float dropout = 0.0f;
  float attention_dropout = 0.0f;
  // Where the Linears' matmuls may split k (MatmulArgs::workspace), in k_split_k_parts equal
  // parts (split_k_part). Decoding gives one: its matmuls have few rows (beam x sentences), so
  // C has few tiles and, on a GPU, most compute units would idle. Training's forwards, over a
  // batch's tokens, fill the device without.
  BufferRef split_k;
  const ModelConfig& config() const { return params.config(); }
  // Part i of split_k (an invalid ref where there is none). Matmuls that may run side by side,
  // the Q, K and V projections, take different parts: one shared workspace would order them.
  BufferRef split_k_part(uint32_t i) const;
  // The storage type of the activations: f16 over fp16 weights (fp32 arithmetic in every kernel).
  DType dtype() const { return params.activation_dtype(); }
  // An activation of `elements` values of dtype() (the pool counts 4-byte words).
  BufferRef act(const std::string& name, uint64_t elements) const {
    return buf(name, dtype() == DType::f16 ? (elements + 1) / 2 : elements);
  }
};

// out[count, d] = embed.weight[token] * sqrt(d) + PE[pos]; pos = t % len, or positions[t] when
// len == 0.
void embed(const Forward& f, const BufferRef& tokens, uint32_t count, uint32_t len,
           const BufferRef& positions, const BufferRef& out, uint32_t dropout_tensor);

}  // namespace vkf::model
