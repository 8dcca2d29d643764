#include "engine/ops/attention.h"

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/launch.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_max_head_dim = 128;
constexpr uint32_t k_delta_local = 256;

// Mirrors `Push` in shaders/common/attention_common.glsl.
struct Push {
  uint32_t batch, heads, len_q, len_k;
  uint32_t q_bs, q_hs, q_rs;
  uint32_t k_bs, k_hs, k_rs;
  uint32_t v_bs, v_hs, v_rs;
  uint32_t o_bs, o_hs, o_rs;
  float scale;
  float dropout_p;
  uint32_t tensor_id;
  uint32_t flags;
};
static_assert(sizeof(Push) == 80);

constexpr uint32_t k_causal = 1, k_key_len = 2, k_q_len = 4, k_dropout = 8;

std::string dims(const AttentionArgs& a) {
  return "batch " + std::to_string(a.batch) + ", heads " + std::to_string(a.heads) + ", len_q " +
         std::to_string(a.len_q) + ", len_k " + std::to_string(a.len_k) + ", d_k " +
         std::to_string(a.d_k) + ", d_v " + std::to_string(a.d_v);
}

AttentionLayout resolved(AttentionLayout l, uint32_t heads, uint32_t len, uint32_t d) {
  if (l.batch_stride == 0 && l.head_stride == 0 && l.row_stride == 0)
    return {heads * len * d, len * d, d};
  return l;
}

// Checks that a strided [batch, heads, len, d] view fits in its buffer and in 32-bit indices.
void check_view(const char* name, const BufferRef& buf, const AttentionLayout& l, uint32_t batch,
                uint32_t heads, uint32_t len, uint32_t d, DType t, const AttentionArgs& a) {
  if (!buf.valid())
    throw Error(std::string("attention: ") + name + " is not set (" + dims(a) + ")");
  if (l.row_stride < d)
    throw Error(std::string("attention: ") + name + " row stride " + std::to_string(l.row_stride) +
                " is smaller than its head dim " + std::to_string(d));
  uint64_t extent = uint64_t{batch - 1} * l.batch_stride + uint64_t{heads - 1} * l.head_stride +
                    uint64_t{len - 1} * l.row_stride + d;
  if (extent > UINT32_MAX)
    throw Error(std::string("attention: ") + name + " spans " + std::to_string(extent) +
                " elements, beyond 32-bit indexing");
  if (extent * dtype_bytes(t) > buf.size)
    throw Error(std::string("attention: ") + name + " needs " +
                std::to_string(extent * dtype_bytes(t)) + " bytes (" + dims(a) + ") but has " +
                std::to_string(buf.size));
}

void check_rows(const char* name, const BufferRef& buf, const AttentionArgs& a) {
  uint64_t bytes = uint64_t{a.batch} * a.heads * a.len_q * 4;
  if (!buf.valid() || buf.size < bytes)
    throw Error(std::string("attention: ") + name + " needs " + std::to_string(bytes) +
                " bytes for [" + std::to_string(a.batch) + ", " + std::to_string(a.heads) + ", " +
                std::to_string(a.len_q) + "] f32");
}

void check_tiles(Device& dev, AttentionKernel kernel, const AttentionTiles& t,
                 const AttentionArgs& a) {
  const DeviceInfo& info = dev.info();
  if (t.workgroup == 0 || t.block_q == 0 || t.block_k == 0 ||
      t.workgroup > info.max_workgroup_invocations || t.workgroup > info.max_workgroup_size[0])
    throw Error("attention: tiles workgroup " + std::to_string(t.workgroup) + ", block_q " +
                std::to_string(t.block_q) + ", block_k " + std::to_string(t.block_k) +
                " are not valid on " + info.name);
  uint32_t shared = attention_shared_bytes(kernel, t, a.d_k, a.d_v);
  if (shared > info.shared_memory_bytes)
    throw Error("attention: tiles " + std::to_string(t.block_q) + "x" + std::to_string(t.block_k) +
                " with d_k " + std::to_string(a.d_k) + ", d_v " + std::to_string(a.d_v) + " need " +
                std::to_string(shared) + " bytes of shared memory, " + info.name + " has " +
                std::to_string(info.shared_memory_bytes));
}

AttentionTiles pick(Device& dev, AttentionKernel kernel, AttentionTiles forced,
                    const AttentionArgs& a) {
  AttentionTiles def = attention_default_tiles(dev.info(), kernel, a.d_k, a.d_v);
  AttentionTiles t{forced.workgroup ? forced.workgroup : def.workgroup,
                   forced.block_q ? forced.block_q : def.block_q,
                   forced.block_k ? forced.block_k : def.block_k};
  check_tiles(dev, kernel, t, a);
  return t;
}

void validate(Device& dev, const AttentionArgs& a) {
  if (a.batch == 0 || a.heads == 0 || a.len_q == 0 || a.len_k == 0)
    throw Error("attention: empty shape (" + dims(a) + ")");
  if (a.d_k == 0 || a.d_v == 0 || a.d_k > k_max_head_dim || a.d_v > k_max_head_dim)
    throw Error("attention: head dims must be 1.." + std::to_string(k_max_head_dim) + " (" +
                dims(a) + ")");
  if (a.batch > 65535 || a.heads > 65535)
    throw Error("attention: batch and heads are limited to 65535 (" + dims(a) + ")");
  if (a.dtype == DType::i32) throw Error("attention: storage must be f32 or f16");
  if (a.dtype == DType::f16 && !dev.info().storage16)
    throw Error("attention: f16 storage needs 16-bit storage buffers, which " + dev.info().name +
                " lacks");
  if (uint64_t{a.batch} * a.heads * a.len_q * a.len_k > (uint64_t{1} << 32) && a.dropout_p > 0)
    throw Error("attention: dropout element ids wrap beyond 2^32 weights (" + dims(a) + ")");
  check_view("q", a.q, resolved(a.q_layout, a.heads, a.len_q, a.d_k), a.batch, a.heads, a.len_q,
             a.d_k, a.dtype, a);
  check_view("k", a.k, resolved(a.k_layout, a.heads, a.len_k, a.d_k), a.batch, a.heads, a.len_k,
             a.d_k, a.dtype, a);
  check_view("v", a.v, resolved(a.v_layout, a.heads, a.len_k, a.d_v), a.batch, a.heads, a.len_k,
             a.d_v, a.dtype, a);
  check_view("o", a.o, resolved(a.o_layout, a.heads, a.len_q, a.d_v), a.batch, a.heads, a.len_q,
             a.d_v, a.dtype, a);
  check_rows("lse", a.lse, a);
  for (const auto& [name, buf] : {std::pair{"key_len", a.key_len}, std::pair{"q_len", a.q_len}})
    if (buf.valid() && buf.size < uint64_t{a.batch} * 4)
      throw Error(std::string("attention: ") + name + " needs " + std::to_string(a.batch) +
                  " int32 values but has " + std::to_string(buf.size) + " bytes");
  if (!(a.dropout_p >= 0.0f && a.dropout_p < 1.0f))
    throw Error("attention: dropout probability " + std::to_string(a.dropout_p) +
                " is outside [0, 1)");
  if (a.dropout_p > 0.0f && (!a.scalars.valid() || a.scalars.size < 64))
    throw Error("attention: dropout needs the StepScalars buffer (seed, step)");
}

Push make_push(const AttentionArgs& a) {
  AttentionLayout q = resolved(a.q_layout, a.heads, a.len_q, a.d_k);
  AttentionLayout k = resolved(a.k_layout, a.heads, a.len_k, a.d_k);
  AttentionLayout v = resolved(a.v_layout, a.heads, a.len_k, a.d_v);
  AttentionLayout o = resolved(a.o_layout, a.heads, a.len_q, a.d_v);
  uint32_t flags = (a.causal ? k_causal : 0) | (a.key_len.valid() ? k_key_len : 0) |
                   (a.q_len.valid() ? k_q_len : 0) | (a.dropout_p > 0.0f ? k_dropout : 0);
  float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(float(a.d_k));
  return {a.batch,        a.heads,       a.len_q,        a.len_k,          q.batch_stride,
          q.head_stride,  q.row_stride,  k.batch_stride, k.head_stride,    k.row_stride,
          v.batch_stride, v.head_stride, v.row_stride,   o.batch_stride,   o.head_stride,
          o.row_stride,   scale,         a.dropout_p,    a.dropout_tensor, flags};
}

std::string kernel_name(const char* base, DType t) {
  return t == DType::f16 ? std::string(base) + "_f16" : std::string(base);
}

// The last three bindings of the main kernels; absent optional buffers are replaced by q (any
// readonly buffer will do: the flags say they are not read).
std::vector<Arg> tail_args(const AttentionArgs& a) {
  return {in(a.key_len.valid() ? a.key_len : a.q), in(a.q_len.valid() ? a.q_len : a.q),
          in(a.scalars.valid() ? a.scalars : a.q)};
}

std::array<uint32_t, 3> tile_groups(uint32_t len, uint32_t block, const AttentionArgs& a) {
  uint32_t n = ceil_div(len, block);
  if (n > 65535) throw Error("attention: " + std::to_string(n) + " tiles of a sequence, max 65535");
  return {n, a.heads, a.batch};
}

}  // namespace

uint32_t attention_shared_bytes(AttentionKernel kernel, const AttentionTiles& t, uint32_t d_k,
                                uint32_t d_v) {
  uint32_t br = t.block_q, bc = t.block_k, kstr = d_k + 1;
  uint32_t floats = 0;
  switch (kernel) {
    case AttentionKernel::forward:
      floats = br * d_k + bc * kstr + bc * d_v + br * bc + 3 * br;
      break;
    case AttentionKernel::backward_kv:
      floats = bc * kstr + bc * d_v + br * d_k + br * d_v + 2 * br * bc + 2 * br;
      break;
    case AttentionKernel::backward_q:
      floats = br * d_k + br * d_v + bc * kstr + bc * d_v + br * bc + 2 * br;
      break;
  }
  return floats * 4;
}

AttentionTiles attention_default_tiles(const DeviceInfo& info, AttentionKernel kernel, uint32_t d_k,
                                       uint32_t d_v) {
  // Largest tiles that fit the device's shared memory, largest first.
  static constexpr std::array<std::array<uint32_t, 2>, 7> k_candidates = {
      {{64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}, {16, 8}, {8, 8}}};
  for (auto [br, bc] : k_candidates) {
    uint32_t wg = std::min<uint32_t>(br * bc >= 2048   ? 256
                                     : br * bc >= 1024 ? 128
                                                       : 64,
                                     info.max_workgroup_invocations);
    AttentionTiles t{wg, br, bc};
    if (attention_shared_bytes(kernel, t, d_k, d_v) <= info.shared_memory_bytes) return t;
  }
  return {std::min<uint32_t>(64, info.max_workgroup_invocations), 4, 4};
}

void attention_forward(Device& dev, Recorder& rec, const AttentionArgs& a) {
  validate(dev, a);
  AttentionTiles t = pick(dev, AttentionKernel::forward, a.tiles, a);
  Push push = make_push(a);
  const Kernel& k = dev.kernel({kernel_name("attention_forward", a.dtype),
                                8,
                                sizeof push,
                                {t.workgroup, t.block_q, t.block_k, a.d_k, a.d_v}});
  std::vector<Arg> args = {in(a.q), in(a.k), in(a.v), out(a.o), out(a.lse)};
  for (const Arg& x : tail_args(a)) args.push_back(x);
  rec.dispatch(k, args, &push, sizeof push, tile_groups(a.len_q, t.block_q, a));
}

void attention_backward(Device& dev, Recorder& rec, const AttentionBackwardArgs& g) {
  const AttentionArgs& a = g.fwd;
  validate(dev, a);
  check_view("d_o", g.d_o, resolved(a.o_layout, a.heads, a.len_q, a.d_v), a.batch, a.heads, a.len_q,
             a.d_v, a.dtype, a);
  check_view("d_q", g.d_q, resolved(a.q_layout, a.heads, a.len_q, a.d_k), a.batch, a.heads, a.len_q,
             a.d_k, a.dtype, a);
  check_view("d_k", g.d_k, resolved(a.k_layout, a.heads, a.len_k, a.d_k), a.batch, a.heads, a.len_k,
             a.d_k, a.dtype, a);
  check_view("d_v", g.d_v, resolved(a.v_layout, a.heads, a.len_k, a.d_v), a.batch, a.heads, a.len_k,
             a.d_v, a.dtype, a);
  check_rows("delta", g.delta, a);
  AttentionTiles tkv = pick(dev, AttentionKernel::backward_kv, g.tiles_kv, a);
  AttentionTiles tq = pick(dev, AttentionKernel::backward_q, g.tiles_q, a);
  Push push = make_push(a);

  uint64_t rows = uint64_t{a.batch} * a.heads * a.len_q;
  const Kernel& kd = dev.kernel({kernel_name("attention_backward_delta", a.dtype),
                                 3,
                                 sizeof push,
                                 {k_delta_local, 1, 1, a.d_k, a.d_v}});
  rec.dispatch(kd, {in(a.o), in(g.d_o), out(g.delta)}, &push, sizeof push,
               groups_1d(rows, k_delta_local));

  const Kernel& kkv = dev.kernel({kernel_name("attention_backward_kv", a.dtype),
                                  11,
                                  sizeof push,
                                  {tkv.workgroup, tkv.block_q, tkv.block_k, a.d_k, a.d_v}});
  std::vector<Arg> args = {in(a.q),   in(a.k),     in(a.v),    in(g.d_o),
                           in(a.lse), in(g.delta), out(g.d_k), out(g.d_v)};
  for (const Arg& x : tail_args(a)) args.push_back(x);
  rec.dispatch(kkv, args, &push, sizeof push, tile_groups(a.len_k, tkv.block_k, a));

  const Kernel& kq = dev.kernel({kernel_name("attention_backward_q", a.dtype),
                                 10,
                                 sizeof push,
                                 {tq.workgroup, tq.block_q, tq.block_k, a.d_k, a.d_v}});
  args = {in(a.q), in(a.k), in(a.v), in(g.d_o), in(a.lse), in(g.delta), out(g.d_q)};
  for (const Arg& x : tail_args(a)) args.push_back(x);
  rec.dispatch(kq, args, &push, sizeof push, tile_groups(a.len_q, tq.block_q, a));
}

}  // namespace vkf::ops
