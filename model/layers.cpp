#include "model/layers.h"

#include <algorithm>
#include <cmath>

#include "engine/error.h"
#include "engine/ops/embedding.h"
#include "engine/ops/matmul.h"

namespace vkf::model {

BufferRef ActivationPool::find_or_allocate(const std::string& name, uint64_t elements,
                                           MemoryKind kind) {
  const uint64_t bytes = std::max<uint64_t>(elements, 1) * 4;
  auto it = live_.find(name);
  if (it != live_.end() && it->second.size() < bytes) {
    retired_.push_back(std::move(it->second));
    live_.erase(it);
    it = live_.end();
  }
  if (it == live_.end()) {
    it = live_.emplace(name, dev_.allocate(bytes, name, kind)).first;
    bytes_ += bytes;
  }
  return it->second.ref().slice(0, elements * 4);
}

BufferRef ActivationPool::write(const std::string& name, uint64_t elements) {
  return find_or_allocate(name, elements, MemoryKind::device);
}

BufferRef ActivationPool::read(const std::string& name, uint64_t elements) const {
  auto it = live_.find(name);
  if (it == live_.end()) throw Error("activation '" + name + "' is read but was never written");
  if (it->second.size() < std::max<uint64_t>(elements, 1) * 4)
    throw Error("activation '" + name + "' is read as " + std::to_string(elements) +
                " elements but was written with " + std::to_string(it->second.size() / 4));
  return it->second.ref().slice(0, elements * 4);
}

BufferRef ActivationPool::host(const std::string& name, uint64_t elements) {
  return find_or_allocate(name, elements, MemoryKind::host);
}

Linear linear_of(const DeviceWeights& p, const std::string& prefix, uint32_t in, uint32_t out) {
  return {p.param(prefix + ".weight"), p.param(prefix + ".bias"), in, out,
          p.param_dtype(prefix + ".weight")};
}

namespace {

// y[rows, out] = x[rows, in] W^T, without its buffers and epilogue.
ops::MatmulArgs forward_args(uint32_t in, uint32_t out, uint32_t rows, DType dtype) {
  ops::MatmulArgs a;
  a.m = rows;
  a.n = out;
  a.k = in;
  a.trans_b = true;
  a.dtype = dtype;
  return a;
}

// dx[rows, in] = dy[rows, out] W[out, in], without its buffers (beta: linear_backward's).
ops::MatmulArgs input_gradient_args(uint32_t in, uint32_t out, uint32_t rows, DType dtype) {
  ops::MatmulArgs gx;
  gx.m = rows;
  gx.n = in;
  gx.k = out;
  gx.dtype = dtype;
  return gx;
}

// dW[out, in] += dy^T[out, rows] x[rows, in], without its buffers.
ops::MatmulArgs weight_gradient_args(uint32_t in, uint32_t out, uint32_t rows, DType dtype) {
  ops::MatmulArgs gw;
  gw.trans_a = true;
  gw.m = out;
  gw.n = in;
  gw.k = rows;
  gw.beta = 1.0f;
  gw.dtype = dtype;
  return gw;
}

// db[1, out] += ones[1, rows] dy[rows, out], without its buffers.
ops::MatmulArgs bias_gradient_args(uint32_t out, uint32_t rows, DType dtype) {
  ops::MatmulArgs gb;
  gb.m = 1;
  gb.n = out;
  gb.k = rows;
  gb.beta = 1.0f;
  gb.dtype = dtype;
  return gb;
}

}  // namespace

BufferRef Forward::split_k_part(uint32_t i) const {
  if (!split_k.valid()) return {};
  // Whole 256-byte runs, so every part's binding offset is aligned (minStorageBufferOffsetAlignment
  // is at most 256); a workspace sized k_split_k_parts x a multiple of 256 loses nothing.
  const uint64_t part = split_k.size / k_split_k_parts / 256 * 256;
  return split_k.slice(i * part, part);
}

void linear_forward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                    const BufferRef& y, uint32_t rows, bool relu, const BufferRef& workspace) {
  ops::MatmulArgs a = forward_args(l.in, l.out, rows, l.dtype);
  a.a = x;
  a.b = l.weight;
  a.c = y;
  a.bias = l.bias;
  a.epilogue = relu ? ops::Epilogue::bias_relu : ops::Epilogue::bias;
  a.workspace = workspace;
  ops::matmul(dev, rec, a);
}

uint64_t linear_forward_workspace_bytes(const Device& dev, uint32_t in, uint32_t out, uint32_t rows,
                                        DType dtype) {
  return ops::matmul_split_k(dev, forward_args(in, out, rows, dtype), true).workspace_bytes;
}

void linear_backward(Device& dev, Recorder& rec, const Linear& l, const BufferRef& x,
                     const BufferRef& dy, const BufferRef& dx, bool accumulate_dx,
                     const BufferRef& dweight, const BufferRef& dbias, const BufferRef& ones,
                     uint32_t rows, const BufferRef& workspace) {
  ops::MatmulArgs gx = input_gradient_args(l.in, l.out, rows, l.dtype);
  gx.a = dy;
  gx.b = l.weight;
  gx.c = dx;
  gx.beta = accumulate_dx ? 1.0f : 0.0f;
  ops::matmul(dev, rec, gx);

  // The gradients' k is the rows: long, while C (out x in, or 1 x out) may have too few tiles to
  // fill the device. Split-k spreads them (one workspace: the recorder orders its reuse).
  ops::MatmulArgs gw = weight_gradient_args(l.in, l.out, rows, l.dtype);
  gw.a = dy;
  gw.b = x;
  gw.c = dweight;
  gw.workspace = workspace;
  ops::matmul(dev, rec, gw);

  ops::MatmulArgs gb = bias_gradient_args(l.out, rows, l.dtype);
  gb.a = ones;
  gb.b = dy;
  gb.c = dbias;
  gb.workspace = workspace;
  ops::matmul(dev, rec, gb);
}

uint64_t linear_backward_workspace_bytes(const Device& dev, uint32_t in, uint32_t out,
                                         uint32_t rows, DType dtype) {
  return std::max(
      ops::matmul_split_k(dev, weight_gradient_args(in, out, rows, dtype), true).workspace_bytes,
      ops::matmul_split_k(dev, bias_gradient_args(out, rows, dtype), true).workspace_bytes);
}

std::vector<ops::MatmulProblem> linear_matmul_problems(uint32_t in, uint32_t out, uint32_t rows,
                                                       DType dtype, bool training,
                                                       bool forward_workspace) {
  auto problem = [](const ops::MatmulArgs& a, bool workspace) {
    ops::MatmulProblem p = ops::matmul_problem(a);
    p.workspace = workspace;
    return p;
  };
  std::vector<ops::MatmulProblem> out_problems{
      problem(forward_args(in, out, rows, dtype), forward_workspace)};
  if (training) {
    out_problems.push_back(problem(input_gradient_args(in, out, rows, dtype), false));
    // The weight gradient's C has too few tiles: training gives it a workspace to split k in.
    out_problems.push_back(problem(weight_gradient_args(in, out, rows, dtype), true));
  }
  return out_problems;
}

ops::AttentionLayout heads_layout(uint32_t len, uint32_t heads, uint32_t dh) {
  return {len * heads * dh, dh, heads * dh};
}

uint32_t dropout_id(bool decoder, int layer, uint32_t site) {
  return (decoder ? 0x10000u : 0u) + uint32_t(layer) * 16u + site;
}

void embed(const Forward& f, const BufferRef& tokens, uint32_t count, uint32_t len,
           const BufferRef& positions, const BufferRef& out, uint32_t dropout_tensor) {
  const ModelConfig& c = f.config();
  ops::EmbeddingForwardArgs e;
  e.tokens = tokens;
  e.positions = positions;
  e.dtype = f.dtype();
  e.table = f.params.param("embed.weight");
  e.table_dtype = f.params.param_dtype("embed.weight");
  if (c.learned_positions) e.pos_table = f.params.param("pos_embed.weight");
  e.out = out;
  e.step = f.scalars;
  e.tokens_count = count;
  e.d = uint32_t(c.d_model);
  e.vocab = uint32_t(c.vocab_size);
  e.len = len;
  e.max_len = uint32_t(c.max_len);
  e.pad_id = c.pad_id;
  e.scale = std::sqrt(float(c.d_model));
  e.dropout = f.dropout;
  e.tensor_id = dropout_tensor;
  ops::embedding_forward(f.dev, f.rec, e);
}

}  // namespace vkf::model
