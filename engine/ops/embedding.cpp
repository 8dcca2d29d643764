#include "engine/ops/embedding.h"

#include <algorithm>
#include <string>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/elementwise.h"
#include "engine/step_scalars.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_local = 256;        // element-wise and per-token kernels
constexpr uint32_t k_accum_local = 128;  // columns of a bucket row summed at once

void need(const BufferRef& b, uint64_t count, const char* name, const char* op,
          DType t = DType::f32) {
  if (!b.valid()) throw Error(std::string(op) + ": " + name + " is missing");
  if (b.size < count * dtype_bytes(t))
    throw Error(std::string(op) + ": " + name + " has " + std::to_string(b.size) +
                " bytes, needs " + std::to_string(count) +
                (t == DType::f16 ? " f16 values" : " 4-byte elements"));
}

void check_common(uint32_t tokens, uint32_t d, uint32_t vocab, float dropout, const BufferRef& step,
                  const char* op) {
  if (tokens == 0 || d == 0 || vocab == 0)
    throw Error(std::string(op) + ": empty shape: tokens " + std::to_string(tokens) + ", d " +
                std::to_string(d) + ", vocab " + std::to_string(vocab));
  if (uint64_t{tokens} * d > 0xFFFFFFFFull || uint64_t{vocab} * d > 0xFFFFFFFFull)
    throw Error(std::string(op) + ": more elements than 32-bit indexing allows");
  if (dropout < 0.0f || dropout >= 1.0f)
    throw Error(std::string(op) + ": dropout " + std::to_string(dropout) + " not in [0, 1)");
  if (dropout > 0.0f && (!step.valid() || step.size < sizeof(StepScalars)))
    throw Error(std::string(op) + ": dropout needs the step-scalar buffer");
}

// Shared by every stage of shaders/embedding_backward.comp.
struct BackwardPush {
  uint32_t tokens, d, keys, len;
  int32_t pad_id;
  uint32_t vocab, key_mode;
  float scale, p;
  uint32_t tensor_id;
};

uint64_t scratch_words(uint32_t keys, uint32_t tokens) {
  return 3ull * keys + 1 + 2ull * tokens;
}

// dw[key(t), :] += scale * mask * dout[t, :] for every token with a valid key.
void scatter_add(Device& dev, Recorder& rec, const EmbeddingBackwardArgs& a, const BufferRef& dw,
                 uint32_t keys, uint32_t key_mode, float scale) {
  const bool dropout = a.dropout > 0.0f;
  BackwardPush push{a.tokens_count, a.d,      keys,
                    a.len,          a.pad_id, a.vocab,
                    key_mode,       scale,    dropout ? a.dropout : 0.0f,
                    a.tensor_id};
  const BufferRef& pos = a.len ? a.tokens : a.positions;
  auto kernel = [&](const std::string& name, uint32_t buffers, uint32_t local) -> const Kernel& {
    return dev.kernel({name, buffers, sizeof push, {local}});
  };
  rec.fill(a.scratch.slice(0, uint64_t{keys} * 4), 0);  // counts
  rec.dispatch(kernel("embedding_backward_count", 3, k_local),
               {in(a.tokens), in(pos), inout(a.scratch)}, push, groups_1d(a.tokens_count, k_local));
  rec.dispatch(kernel("embedding_backward_scan", 1, k_local), {inout(a.scratch)}, push, {1, 1, 1});
  rec.dispatch(kernel("embedding_backward_place", 3, k_local),
               {in(a.tokens), in(pos), inout(a.scratch)}, push, groups_1d(a.tokens_count, k_local));
  rec.dispatch(kernel("embedding_backward_rank", 3, k_local),
               {in(a.tokens), in(pos), inout(a.scratch)}, push, groups_1d(a.tokens_count, k_local));
  rec.dispatch(
      kernel(kernel_for_dtype("embedding_backward_accum", a.dout_dtype), 6, k_accum_local),
      {in(a.tokens), in(pos), in(a.scratch), in(a.dout), inout(dw), in(dropout ? a.step : a.dout)},
      push, groups_1d(a.tokens_count, 1));
}

}  // namespace

uint64_t embedding_backward_scratch_bytes(uint32_t vocab, uint32_t max_len, uint32_t tokens) {
  return scratch_words(std::max(vocab, max_len), tokens) * 4;
}

void embedding_forward(Device& dev, Recorder& rec, const EmbeddingForwardArgs& a) {
  const char* op = "embedding_forward";
  check_common(a.tokens_count, a.d, a.vocab, a.dropout, a.step, op);
  check_storage_dtype(dev, a.dtype, op);
  check_storage_dtype(dev, a.table_dtype, std::string(op) + " table");
  const bool learned = a.pos_table.valid();
  need(a.tokens, a.tokens_count, "tokens", op);
  if (a.len == 0) need(a.positions, a.tokens_count, "positions", op);
  need(a.table, uint64_t{a.vocab} * a.d, "table", op, a.table_dtype);
  if (learned) {
    if (a.max_len == 0) throw Error(std::string(op) + ": learned positions need max_len");
    need(a.pos_table, uint64_t{a.max_len} * a.d, "pos_table", op);
  }
  need(a.out, uint64_t{a.tokens_count} * a.d, "out", op, a.dtype);
  const bool dropout = a.dropout > 0.0f;
  struct {
    uint32_t tokens, d, vocab, len;
    int32_t pad_id;
    uint32_t max_len, learned;
    float scale, p;
    uint32_t tensor_id;
  } push{a.tokens_count,
         a.d,
         a.vocab,
         a.len,
         a.pad_id,
         a.max_len,
         learned ? 1u : 0u,
         a.scale,
         dropout ? a.dropout : 0.0f,
         a.tensor_id};
  const Kernel& k =
      dev.kernel({kernel_for_dtype(a.table_dtype == DType::f16 ? "embedding_forward_half_table"
                                                               : "embedding_forward",
                                   a.dtype),
                  6,
                  sizeof push,
                  {k_local}});
  rec.dispatch(k,
               {in(a.tokens), in(a.len ? a.tokens : a.positions), in(a.table),
                in(learned ? a.pos_table : a.table), out(a.out), in(dropout ? a.step : a.table)},
               push,
               groups_1d(ceil_div(uint64_t{a.tokens_count} * a.d, 4), k_local));  // 4 elements each
}

void embedding_backward(Device& dev, Recorder& rec, const EmbeddingBackwardArgs& a) {
  const char* op = "embedding_backward";
  check_common(a.tokens_count, a.d, a.vocab, a.dropout, a.step, op);
  check_storage_dtype(dev, a.dout_dtype, op);
  const bool learned = a.dpos_table.valid();
  need(a.tokens, a.tokens_count, "tokens", op);
  if (a.len == 0) need(a.positions, a.tokens_count, "positions", op);
  need(a.dout, uint64_t{a.tokens_count} * a.d, "dout", op, a.dout_dtype);
  need(a.dtable, uint64_t{a.vocab} * a.d, "dtable", op);
  if (learned) {
    if (a.max_len == 0) throw Error(std::string(op) + ": learned positions need max_len");
    need(a.dpos_table, uint64_t{a.max_len} * a.d, "dpos_table", op);
  }
  need(a.scratch, scratch_words(std::max(a.vocab, learned ? a.max_len : 0u), a.tokens_count),
       "scratch", op);
  scatter_add(dev, rec, a, a.dtable, a.vocab, 0, a.scale);
  if (learned) scatter_add(dev, rec, a, a.dpos_table, a.max_len, 1, 1.0f);
}

}  // namespace vkf::ops
