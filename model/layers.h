#pragma once
// The Transformer's forward building blocks (docs/design.md: post-LN, PyTorch Linear layout),
// recorded with engine ops: embeddings, linear layers, multi-head attention, add & norm, the
// position-wise FFN and the encoder stack. The training graph records them over whole sequences;
// the decoder (model/decode/) records the same blocks for one position at a time.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/attention.h"
#include "engine/recorder.h"
#include "model/device_weights.h"

namespace vkf::model {

// Activations and host-visible inputs/outputs by name. `write` allocates on first use (or reuses)
// the buffer a forward writes; `read` finds one written before and refuses a name never written
// (or written smaller), so a misspelled name is an error rather than a fresh, uninitialised
// buffer. One pool can serve the graphs of every bucket shape, which run one at a time, instead
// of one set of buffers per shape. A buffer that must grow is replaced; the old one stays alive
// for the graphs already recorded against it (record the largest shapes first to avoid that).
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
};
Linear linear_of(const DeviceWeights& p, const std::string& prefix, uint32_t in, uint32_t out);

// y[rows, out] = x[rows, in] W^T + b (then ReLU), fused in the matmul epilogue.
void linear_forward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                    const BufferRef& y, uint32_t rows, bool relu = false);
// Given dy [rows, out]: dx (= or +=) dy W; dW += dy^T x; db += ones^T dy.
void linear_backward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                     const BufferRef& dy, const BufferRef& dx, bool accumulate_dx,
                     const BufferRef& dweight, const BufferRef& dbias, const BufferRef& ones,
                     uint32_t rows);

// A [batch, len, heads * dh] projection output seen as [batch, heads, len, dh].
ops::AttentionLayout heads_layout(uint32_t len, uint32_t heads, uint32_t dh);

// Philox tensor ids: one stream per dropout site, so no two masks coincide.
uint32_t dropout_id(bool decoder, int layer, uint32_t site);

// Device activations by name.
using BufferSource = std::function<BufferRef(const std::string& name, uint64_t elements)>;
inline BufferSource source_of(ActivationPool& b) {
  return [&b](const std::string& name, uint64_t elements) { return b.write(name, elements); };
}

// What every forward block records into.
struct Forward {
  Device& dev;
  Recorder& rec;
  const DeviceWeights& params;
  BufferSource buf;
  BufferRef scalars;  // StepScalars (dropout seed and step)
  float dropout = 0.0f;
  float attention_dropout = 0.0f;
  const ModelConfig& config() const { return params.config(); }
};

// out[count, d] = embed.weight[token] * sqrt(d) + PE[pos]; pos = t % len, or positions[t] when
// len == 0.
void embed(const Forward& f, const BufferRef& tokens, uint32_t count, uint32_t len,
           const BufferRef& positions, const BufferRef& out, uint32_t dropout_tensor);

// x_out = LayerNorm(x + dropout(s)) with the `norm` parameters; saves h, mean, rstd under `name`.
// The rows are sentences of `len` tokens (for the dropout mask of a share of a batch).
void add_norm(const Forward& f, const std::string& name, const std::string& norm,
              const BufferRef& x, const BufferRef& s, const BufferRef& x_out, uint32_t rows,
              uint32_t len, uint32_t dropout_tensor);

// Multi-head attention of xq [batch * Lq, d] over xkv [batch * Lk, d] with the `prefix`
// projections; the o_proj output goes to s_out. Saves q, k, v, o, lse under `name`.
void mha(const Forward& f, const std::string& name, const std::string& prefix, const BufferRef& xq,
         const BufferRef& xkv, uint32_t batch, uint32_t Lq, uint32_t Lk, const BufferRef& key_len,
         bool causal, const BufferRef& s_out, uint32_t dropout_tensor);

// s_out = fc2(relu(fc1(x))); saves the hidden activation under `name`.f.
void ffn(const Forward& f, const std::string& name, const std::string& prefix, const BufferRef& x,
         const BufferRef& s_out, uint32_t rows);

// Embeds src [batch, Ls] and runs the encoder layers; returns the memory [batch * Ls, d]
// (activations under enc.*).
BufferRef encoder_forward(const Forward& f, const BufferRef& src, const BufferRef& src_len,
                          uint32_t batch, uint32_t Ls);

}  // namespace vkf::model
