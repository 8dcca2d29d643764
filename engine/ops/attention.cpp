#include "engine/ops/attention.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/attention_choice.h"
#include "engine/shader_bindings.h"
#include "engine/shader_registry.h"
#include "engine/step_scalars.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_max_head_dim = 128;
constexpr uint32_t k_delta_local = 256;
constexpr uint32_t k_max_rows = 8;  // rows path: rows per lane

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

// check_view for one of the attention operands: a [batch, heads, len, d] view through `layout`.
void check_operand(const char* name, const BufferRef& buf, const AttentionLayout& layout,
                   uint32_t len, uint32_t d, const AttentionArgs& a) {
  check_view(name, buf, resolved(layout, a.heads, len, d), a.batch, a.heads, len, d, a.dtype, a);
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

// The rows path needs the workgroup to be one subgroup of 4..32 lanes, a multiple of 4: dropout
// reads the mask four weights at a time and dQ keeps a block's mask as bits of a uint.
bool rows_supported(const DeviceInfo& info) {
  // The rows kernels hand K/V rows across the subgroup with subgroupShuffle (a device may list
  // basic subgroup operations only: VP_LUNARG_desktop_baseline_2023).
  return info.subgroup_shuffle && info.subgroup_size >= 4 && info.subgroup_size <= 32 &&
         info.subgroup_size % 4 == 0 && info.subgroup_size <= info.max_workgroup_invocations &&
         info.subgroup_size <= info.max_workgroup_size[0];
}

// What `automatic` means: the device's default, or DeviceOptions::ops.attention_rows (the tools'
// VKF_ATTENTION_PATH=tiled|rows, to compare the paths inside a whole model, e.g. bench_train).
AttentionPath automatic_path(const Device& dev, AttentionPath device_default) {
  const std::optional<bool>& rows = dev.options().ops.attention_rows;
  if (!rows) return device_default;
  return *rows ? AttentionPath::rows : AttentionPath::tiled;
}

AttentionTiles pick(Device& dev, AttentionKernel kernel, AttentionTiles forced,
                    const AttentionArgs& a) {
  const DeviceInfo& info = dev.info();
  // The device's tuning for the shape class, else the default; the caller's fields win.
  const AttentionChoice choice = choose_attention(
      info, dev.tuning(), {a.dtype, kernel, a.d_k, a.d_v, a.len_q, a.len_k, a.causal});
  const bool tuned = choice.source == ConfigSource::tuned;
  AttentionTiles def = choice.tiles;
  def.path = automatic_path(dev, def.path);
  // A tuned entry carries its rows per lane and unroll; the default leaves them to the rules
  // below (rows capped by the sequence, unroll by the subgroup width).
  using Unroll = AttentionTiles::Unroll;
  const uint32_t rows = forced.rows ? forced.rows : tuned ? def.rows : 0;
  const Unroll unroll = forced.unroll != Unroll::automatic ? forced.unroll
                        : tuned                            ? def.unroll
                                                           : Unroll::automatic;
  AttentionTiles t{forced.workgroup ? forced.workgroup : def.workgroup,
                   forced.block_q ? forced.block_q : def.block_q,
                   forced.block_k ? forced.block_k : def.block_k,
                   forced.path != AttentionPath::automatic ? forced.path : def.path,
                   rows,
                   unroll};
  if (t.path == AttentionPath::rows) {
    if (t.unroll == AttentionTiles::Unroll::automatic) t.unroll = attention_default_unroll(info);
    if (!rows_supported(info))
      throw Error("attention: the rows path needs a subgroup of 4..32 lanes, a multiple of 4; " +
                  info.name + " has " + std::to_string(info.subgroup_size));
    if (t.rows == 0) {  // the default, capped so that short sequences leave no lane row idle
      const uint32_t def_rows = attention_default_tiles(info, kernel, a.d_k, a.d_v).rows;
      uint32_t len = kernel == AttentionKernel::backward_kv ? a.len_k : a.len_q;
      t.rows = std::max(1u, std::min(def_rows, ceil_div(len, info.subgroup_size)));
    }
    if (t.rows > k_max_rows)
      throw Error("attention: " + std::to_string(t.rows) + " rows per lane, max " +
                  std::to_string(k_max_rows));
    return t;
  }
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
  check_operand("q", a.q, a.q_layout, a.len_q, a.d_k, a);
  check_operand("k", a.k, a.k_layout, a.len_k, a.d_k, a);
  check_operand("v", a.v, a.v_layout, a.len_k, a.d_v, a);
  check_operand("o", a.o, a.o_layout, a.len_q, a.d_v, a);
  check_rows("lse", a.lse, a);
  for (const auto& [name, buf] : {std::pair{"key_len", a.key_len}, std::pair{"q_len", a.q_len}})
    if (buf.valid() && buf.size < uint64_t{a.batch} * 4)
      throw Error(std::string("attention: ") + name + " needs " + std::to_string(a.batch) +
                  " int32 values but has " + std::to_string(buf.size) + " bytes");
  if (!(a.dropout_p >= 0.0f && a.dropout_p < 1.0f))
    throw Error("attention: dropout probability " + std::to_string(a.dropout_p) +
                " is outside [0, 1)");
  if (a.dropout_p > 0.0f && (!a.scalars.valid() || a.scalars.size < sizeof(StepScalars)))
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

// The same three as texel views, for the _texel variants (attention_common.glsl, VKF_TEXEL_TAIL).
// An absent one views a present one, or LSE's first word: it is not read, but its descriptor
// must be a valid view, and q may be fp16 or too long for one.
std::vector<Arg> tail_texel_args(const AttentionArgs& a) {
  const BufferRef any = a.key_len.valid()   ? a.key_len
                        : a.q_len.valid()   ? a.q_len
                        : a.scalars.valid() ? a.scalars
                                            : a.lse.slice(0, sizeof(float));
  return {in_texels(a.key_len.valid() ? a.key_len : any, VK_FORMAT_R32_SINT),
          in_texels(a.q_len.valid() ? a.q_len : any, VK_FORMAT_R32_SINT),
          in_texels(a.scalars.valid() ? a.scalars : any, VK_FORMAT_R32_UINT)};
}

// Whether `kernel`'s storage-buffer variant binds more storage buffers than a stage of `info`
// may (the backward kernels bind 10 and 11; Mesa's V3DV allows 8), so that its _texel variant
// reads the masks and step scalars through texel views instead.
bool needs_texel_tail(const DeviceInfo& info, AttentionKernel kind, const std::string& kernel) {
  return kind != AttentionKernel::forward &&
         spirv_storage_buffers(shaders::find(kernel)) > info.max_stage_storage_buffers;
}

// Specialization constants of the rows kernels (shaders/common/attention_common.glsl, ATT_ROWS):
// lanes, rows per lane, (unused), d_k, d_v, 4-vector views, dropout, 4-aligned mask runs.
std::vector<uint32_t> rows_spec(const DeviceInfo& info, AttentionKernel kernel, uint32_t rows,
                                const AttentionArgs& a) {
  auto vec = [](const AttentionLayout& l, uint32_t d) {
    return d % 4 == 0 && l.batch_stride % 4 == 0 && l.head_stride % 4 == 0 && l.row_stride % 4 == 0;
  };
  uint32_t bits = (vec(resolved(a.q_layout, a.heads, a.len_q, a.d_k), a.d_k) ? 1u : 0u) |
                  (vec(resolved(a.k_layout, a.heads, a.len_k, a.d_k), a.d_k) ? 2u : 0u) |
                  (vec(resolved(a.v_layout, a.heads, a.len_k, a.d_v), a.d_v) ? 4u : 0u) |
                  (vec(resolved(a.o_layout, a.heads, a.len_q, a.d_v), a.d_v) ? 8u : 0u);
  // A lane's run of mask elements starts at row * len_k + (a multiple of the lanes for the
  // forward and dQ, of `rows` for dK/dV).
  bool align4 = a.len_k % 4 == 0 && (kernel != AttentionKernel::backward_kv || rows % 4 == 0);
  return {info.subgroup_size, rows, 1, a.d_k, a.d_v, bits, a.dropout_p > 0.0f ? 1u : 0u,
          align4 ? 1u : 0u};
}

std::array<uint32_t, 3> tile_groups(uint32_t len, uint32_t block, const AttentionArgs& a) {
  uint32_t n = ceil_div(len, block);
  if (n > 65535) throw Error("attention: " + std::to_string(n) + " tiles of a sequence, max 65535");
  return {n, a.heads, a.batch};
}

}  // namespace

uint32_t attention_shared_bytes(AttentionKernel kernel, const AttentionTiles& t, uint32_t d_k,
                                uint32_t d_v) {
  if (t.path == AttentionPath::rows) return 0;
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

std::string attention_tiles_misfit(const DeviceInfo& info, AttentionKernel kernel,
                                   const AttentionTiles& t, uint32_t d_k, uint32_t d_v) {
  if (t.path == AttentionPath::rows) {
    if (!rows_supported(info))
      return "the rows path needs subgroup shuffles and a subgroup of 4..32 lanes, a multiple "
             "of 4";
    if (t.rows == 0 || t.rows > k_max_rows)
      return std::to_string(t.rows) + " rows per lane (1.." + std::to_string(k_max_rows) + ")";
    if (t.unroll == AttentionTiles::Unroll::automatic) return "unroll left automatic";
    return "";
  }
  if (t.path != AttentionPath::tiled) return "path left automatic";
  if (t.workgroup == 0 || t.block_q == 0 || t.block_k == 0 ||
      t.workgroup > info.max_workgroup_invocations || t.workgroup > info.max_workgroup_size[0])
    return "workgroup " + std::to_string(t.workgroup) + " with tiles " + std::to_string(t.block_q) +
           "x" + std::to_string(t.block_k) + " is not valid here";
  if (attention_shared_bytes(kernel, t, d_k, d_v) > info.shared_memory_bytes)
    return "needs " + std::to_string(attention_shared_bytes(kernel, t, d_k, d_v)) +
           " bytes of shared memory, the device has " + std::to_string(info.shared_memory_bytes);
  return "";
}

namespace {

// The tiled path's tiles: the largest that fit the device's shared memory, largest first.
AttentionTiles default_tiled(const DeviceInfo& info, AttentionKernel kernel, uint32_t d_k,
                             uint32_t d_v) {
  static constexpr std::array<std::array<uint32_t, 2>, 7> k_candidates = {
      {{64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}, {16, 8}, {8, 8}}};
  for (auto [br, bc] : k_candidates) {
    uint32_t wg = std::min<uint32_t>(br * bc >= 2048   ? 256
                                     : br * bc >= 1024 ? 128
                                                       : 64,
                                     info.max_workgroup_invocations);
    AttentionTiles t{wg, br, bc, AttentionPath::tiled};
    if (attention_shared_bytes(kernel, t, d_k, d_v) <= info.shared_memory_bytes) return t;
  }
  return {std::min<uint32_t>(64, info.max_workgroup_invocations), 4, 4, AttentionPath::tiled};
}

}  // namespace

AttentionTiles attention_default_tiles(const DeviceInfo& info, AttentionKernel kernel, uint32_t d_k,
                                       uint32_t d_v) {
  AttentionTiles t = default_tiled(info, kernel, d_k, d_v);
  t.path = info.is_cpu() && rows_supported(info) ? AttentionPath::rows : AttentionPath::tiled;
  // Rows per lane: each row a lane owns reuses every shuffled K/V (or Q/dO) element once more,
  // but its vectors (d_k + d_v floats, twice that for dK/dV) must stay near the registers.
  t.rows = std::max(d_k, d_v) <= 64 ? 4 : 2;
  if (slow_rows_compiler(info)) t.rows = 1;  // see attention_default_unroll
  if (t.path == AttentionPath::rows) t.unroll = attention_default_unroll(info);
  return t;
}

AttentionTiles::Unroll attention_default_unroll(const DeviceInfo& info) {
  // Where the driver compiles the rows kernels slowly: the first dispatch of the three kernels at
  // d 64 with dropout (each kernel's compile) took 442 s at 4 rows a lane rolled, 402 s at 2
  // rows unrolled, 190 s at 2 rolled and 86 s at 1 rolled, where Mesa 22.3 takes 64 s at 4 rows
  // unrolled: compile time grows with the rows and doubles unrolled. The default there is what
  // compiles in about the time other drivers take (1 row, rolled); a tuning run (vkf tune) may
  // still pick more rows where the run time pays for the compile.
  if (slow_rows_compiler(info)) return AttentionTiles::Unroll::rolled;
  // Elsewhere unrolled at 16 lanes and more (constant shuffle indices ran the backward 1.8-2.3x
  // faster there), rolled at 8, where unrolling costs more than it saves.
  return info.subgroup_size >= 16 ? AttentionTiles::Unroll::unrolled
                                  : AttentionTiles::Unroll::rolled;
}

bool slow_rows_compiler(const DeviceInfo& info) {
  // Measured: 25.0.7 (bookworm-backports) slow; 22.3.6 and 26.1 fast. 22.3.6 and 25.0.7 both
  // build with LLVM 15 here, so the difference is Mesa's, not LLVM's.
  return info.is_cpu() && info.mesa_major() == 25;
}

namespace {

// Dispatches one of the three main kernels on the path `t` chose: "attention_rows_<name>" (one
// subgroup per workgroup, `t.rows` rows a lane) or the tiled "attention_<name>". `args` are the
// kernel's own bindings; the optional masks and scalars are appended. `len` is the length the
// kernel's workgroups tile (queries for forward and dQ, keys for dK/dV).
void dispatch_on_path(Device& dev, Recorder& rec, AttentionKernel kind, const std::string& name,
                      const AttentionTiles& t, const AttentionArgs& a, std::vector<Arg> args,
                      uint32_t len) {
  // The backward kernels come rolled or unrolled on the rows path (AttentionTiles::unroll); the
  // forward is always unrolled.
  const bool unrolled = t.path == AttentionPath::rows && kind != AttentionKernel::forward &&
                        t.unroll == AttentionTiles::Unroll::unrolled;
  const std::string base = (t.path == AttentionPath::rows ? "attention_rows_" : "attention_") +
                           name + (unrolled ? "_unrolled" : "");
  const bool texel_tail = needs_texel_tail(dev.info(), kind, kernel_name(base.c_str(), a.dtype));
  const uint32_t first_tail = uint32_t(args.size());
  for (const Arg& x : texel_tail ? tail_texel_args(a) : tail_args(a)) args.push_back(x);
  const std::string kernel = kernel_name((base + (texel_tail ? "_texel" : "")).c_str(), a.dtype);
  const uint32_t texel_bits = texel_tail ? 0x7u << first_tail : 0u;
  const Push push = make_push(a);
  const uint32_t bindings = uint32_t(args.size());
  if (t.path == AttentionPath::rows) {
    KernelSpec spec{kernel, bindings, sizeof push, rows_spec(dev.info(), kind, t.rows, a)};
    spec.texel_buffers = texel_bits;
    // The kernels take gl_SubgroupInvocationID for the lane and shuffle across all WG lanes, so
    // the workgroup must be one subgroup of exactly subgroup_size lanes. A device whose
    // subgroup size varies by pipeline (Intel's 8..32, say) may otherwise compile a 32-wide
    // workgroup as two subgroups of 16: require the size where VK_EXT_subgroup_size_control
    // lets us (engine/kernel.cpp); elsewhere the size is fixed at subgroup_size.
    if (dev.info().subgroup_size_control &&
        dev.info().min_subgroup_size != dev.info().max_subgroup_size)
      spec.subgroup_size = dev.info().subgroup_size;
    const Kernel& k = dev.kernel(spec);
    rec.dispatch(k, args, &push, sizeof push,
                 tile_groups(len, dev.info().subgroup_size * t.rows, a));
    return;
  }
  KernelSpec spec{kernel, bindings, sizeof push, {t.workgroup, t.block_q, t.block_k, a.d_k, a.d_v}};
  spec.texel_buffers = texel_bits;
  const Kernel& k = dev.kernel(spec);
  rec.dispatch(k, args, &push, sizeof push,
               tile_groups(len, kind == AttentionKernel::backward_kv ? t.block_k : t.block_q, a));
}

}  // namespace

void attention_forward(Device& dev, Recorder& rec, const AttentionArgs& a) {
  validate(dev, a);
  const AttentionTiles t = pick(dev, AttentionKernel::forward, a.tiles, a);
  dispatch_on_path(dev, rec, AttentionKernel::forward, "forward", t, a,
                   {in(a.q), in(a.k), in(a.v), out(a.o), out(a.lse)}, a.len_q);
}

void attention_backward(Device& dev, Recorder& rec, const AttentionBackwardArgs& g) {
  const AttentionArgs& a = g.fwd;
  validate(dev, a);
  check_operand("d_o", g.d_o, a.o_layout, a.len_q, a.d_v, a);
  check_operand("d_q", g.d_q, a.q_layout, a.len_q, a.d_k, a);
  check_operand("d_k", g.d_k, a.k_layout, a.len_k, a.d_k, a);
  check_operand("d_v", g.d_v, a.v_layout, a.len_k, a.d_v, a);
  check_rows("delta", g.delta, a);
  AttentionTiles tkv = pick(dev, AttentionKernel::backward_kv, g.tiles_kv, a);
  AttentionTiles tq = pick(dev, AttentionKernel::backward_q, g.tiles_q, a);
  const Push push = make_push(a);
  const uint64_t rows = uint64_t{a.batch} * a.heads * a.len_q;
  const Kernel& kd = dev.kernel({kernel_name("attention_backward_delta", a.dtype),
                                 3,
                                 sizeof push,
                                 {k_delta_local, 1, 1, a.d_k, a.d_v}});
  rec.dispatch(kd, {in(a.o), in(g.d_o), out(g.delta)}, &push, sizeof push,
               groups_1d(rows, k_delta_local));

  dispatch_on_path(
      dev, rec, AttentionKernel::backward_kv, "backward_kv", tkv, a,
      {in(a.q), in(a.k), in(a.v), in(g.d_o), in(a.lse), in(g.delta), out(g.d_k), out(g.d_v)},
      a.len_k);
  dispatch_on_path(dev, rec, AttentionKernel::backward_q, "backward_q", tq, a,
                   {in(a.q), in(a.k), in(a.v), in(g.d_o), in(a.lse), in(g.delta), out(g.d_q)},
                   a.len_q);
}

}  // namespace vkf::ops
