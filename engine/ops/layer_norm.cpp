#include "engine/ops/layer_norm.h"

#include <algorithm>
#include <array>
#include <bit>
#include <span>
#include <string>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/shader_bindings.h"
#include "engine/shader_registry.h"
#include "engine/step_scalars.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_param_local = 64;  // columns per workgroup of the dgamma/dbeta kernels

void need(const BufferRef& b, uint64_t count, const char* name, const char* op,
          DType t = DType::f32) {
  if (!b.valid()) throw Error(std::string(op) + ": " + name + " is missing");
  if (b.size < count * dtype_bytes(t))
    throw Error(std::string(op) + ": " + name + " has " + std::to_string(b.size) +
                " bytes, needs " + std::to_string(count) +
                (t == DType::f16 ? " f16 values" : " floats"));
}

// f32, or f16 storage where the device can load and store 16-bit values.
void check_dtype(const Device& dev, DType t, const char* op) {
  if (t != DType::f32 && t != DType::f16)
    throw Error(std::string(op) + ": dtype " + dtype_name(t) + " is not supported (f32 or f16)");
  if (t == DType::f16 && !dev.info().storage16)
    throw Error(std::string(op) + ": f16 storage needs 16-bit storage buffers, which " +
                dev.info().name + " does not support");
}

// The f16 kernels are variants with an "_f16" suffix.
std::string with_dtype(std::string kernel, DType t) {
  return t == DType::f16 ? kernel + "_f16" : kernel;
}

void need_step(const BufferRef& step, const char* op) {
  if (!step.valid() || step.size < sizeof(StepScalars))
    throw Error(std::string(op) + ": dropout needs the step-scalar buffer (" +
                std::to_string(sizeof(StepScalars)) + " bytes)");
}

void check_shape(uint32_t rows, uint32_t d, const char* op) {
  if (rows == 0 || d == 0)
    throw Error(std::string(op) + ": empty shape [" + std::to_string(rows) + ", " +
                std::to_string(d) + "]");
  if (uint64_t{rows} * d > 0xFFFFFFFFull)
    throw Error(std::string(op) + ": [" + std::to_string(rows) + ", " + std::to_string(d) +
                "] has more elements than 32-bit indexing allows");
}

// Resolves `automatic` by the static rule (layer_norm_default_config).
RowReduce resolve_reduce(const Device& dev, RowReduce r, uint32_t d, const char* op) {
  const DeviceInfo& info = dev.info();
  if (r == RowReduce::automatic) return layer_norm_default_config(info, d).reduce;
  if (r != RowReduce::shared && !info.subgroup_arithmetic)
    throw Error(std::string(op) + ": the device has no subgroup arithmetic");
  return r;
}

// Power-of-two workgroup: a workgroup per row takes about four columns an invocation, 32..256
// invocations; a subgroup per row takes 64 invocations (one to eight rows).
uint32_t pick_workgroup(const Device& dev, uint32_t d, uint32_t forced, RowReduce r,
                        const char* op) {
  uint32_t limit = std::min(dev.info().max_workgroup_invocations, dev.info().max_workgroup_size[0]);
  if (forced) {
    if (!std::has_single_bit(forced) || forced > limit)
      throw Error(std::string(op) + ": workgroup size " + std::to_string(forced) +
                  " is not a power of two up to " + std::to_string(limit));
    return forced;
  }
  uint32_t wg = r == RowReduce::subgroup_rows
                    ? 64
                    : std::clamp<uint32_t>(std::bit_ceil((d + 3) / 4), 32, 256);
  return std::min(wg, std::bit_floor(limit));
}

// The kernel variant, the rows each workgroup covers and the grid.
struct RowPlan {
  std::string kernel;
  uint32_t workgroup_size;
  uint32_t rows_per_group;
  std::array<uint32_t, 3> groups;
  uint32_t kept_runs = 1;  // spec constant RUNS: runs of four columns a lane keeps in registers
  bool texel = false;      // the _texel variant: the inputs through texel views
};

// Runs of four columns a lane keeps in registers between its passes over a row of d columns
// that `lanes` invocations share (shaders/layer_norm_forward.comp, RUNS): the whole row where it
// takes at most 16 runs a lane (64 values), which covers d = 512 and 1024 at 16 lanes or more.
// Longer rows read the rest again. For a subgroup per row the lanes are the device's usual
// subgroup size; a pipeline given another one stays correct. CPU devices keep two runs: the
// re-reads cost nothing measurable on Mesa 22.3's lavapipe (bench_norm at 4096 x 512, one run
// against eight), while Mesa 26's spent minutes compiling the tests' 16-run kernels.
uint32_t kept_runs(const Device& dev, uint32_t d, uint32_t lanes) {
  const uint32_t most = dev.info().is_cpu() ? 2 : 16;
  return std::clamp<uint32_t>(ceil_div(d, 4 * std::max(1u, lanes)), 1, most);
}

// A texel view's format for a [rows, d] tensor of `t`, or for gamma and beta (f32).
VkFormat texel_format(DType t) {
  return t == DType::f16 ? VK_FORMAT_R16_SFLOAT : VK_FORMAT_R32_SFLOAT;
}

// An input a texel-reading variant views: its buffer and storage type.
using TexelInput = std::pair<BufferRef, DType>;

// What the caller asked of the kernel (LayerNorm{Forward,Backward}Args' tuning fields) and the
// inputs a texel-reading variant would view.
struct PlanRequest {
  RowReduce reduce;
  uint32_t workgroup_size;
  RowKernelConfig::Reads reads;
  DType dtype;
  bool backward;
  uint32_t rows, d;
  std::span<const TexelInput> texel_inputs;
};

// Whether the inputs are read through texel views. Forced texel reads that a view cannot take
// are an error; texel reads from the tuning fall back to the storage buffers.
bool use_texels(const Device& dev, std::span<const TexelInput> inputs, RowKernelConfig::Reads reads,
                bool forced, const char* op) {
  if (reads != RowKernelConfig::Reads::texel) return false;
  for (const auto& [buffer, type] : inputs) {
    std::string why = texel_view_misfit(dev.info(), buffer, texel_format(type));
    if (why.empty() && buffer.size / dtype_bytes(type) > 0x7fffffffu)
      why = "more than 2^31 elements (texelFetch takes an int)";
    if (why.empty()) continue;
    if (forced)
      throw Error(std::string(op) + ": an input cannot be read through a texel view: " + why);
    return false;
  }
  return true;
}

RowPlan plan_rows(const Device& dev, const PlanRequest& q, const std::string& base,
                  const char* op) {
  const bool reads_forced = q.reads != RowKernelConfig::Reads::automatic;
  LayerNormConfig asked{q.workgroup_size, q.reduce, q.reads};
  if (q.reduce == RowReduce::automatic && q.workgroup_size == 0 && !reads_forced)
    // Nothing forced: the device's tuning for the shape class, else the static rule.
    asked = choose_layer_norm(dev.info(), dev.tuning(), {q.dtype, q.backward, q.rows, q.d}).config;
  const RowReduce r = resolve_reduce(dev, asked.reduce, q.d, op);
  const uint32_t wg = pick_workgroup(dev, q.d, asked.workgroup_size, r, op);
  const std::string reduce = r == RowReduce::shared     ? ""
                             : r == RowReduce::subgroup ? "_sg"
                                                        : "_sgrow";
  bool texel = use_texels(dev, q.texel_inputs, asked.reads, reads_forced, op);
  // A device that cannot bind the storage variant's buffers (the forward binds 9, Mesa's V3DV
  // allows 8 a stage) reads the inputs through texel views instead, where they can take them;
  // else the kernel is refused by name when it is created.
  if (!texel && !reads_forced &&
      spirv_storage_buffers(shaders::find(with_dtype(base + reduce, q.dtype))) >
          dev.info().max_stage_storage_buffers)
    texel = use_texels(dev, q.texel_inputs, RowKernelConfig::Reads::texel, false, op);
  const std::string reads = texel ? "_texel" : "";
  if (r == RowReduce::shared)
    return {base + reads, wg, 1, groups_1d(q.rows, 1), kept_runs(dev, q.d, wg), texel};
  if (r == RowReduce::subgroup)
    return {base + "_sg" + reads, wg, 1, groups_1d(q.rows, 1), kept_runs(dev, q.d, wg), texel};
  // Normally one row per subgroup; any subgroup size the pipeline gets is still correct.
  const uint32_t lanes = std::max(1u, dev.info().subgroup_size);
  const uint32_t per_group = std::max(1u, wg / lanes);
  return {base + "_sgrow" + reads,
          wg,
          per_group,
          groups_1d(ceil_div(q.rows, per_group), 1),
          kept_runs(dev, q.d, std::min(wg, lanes)),
          texel};
}

// A binding the kernel reads: through a texel view of `t`'s format in a _texel variant.
Arg read_arg(const RowPlan& plan, const BufferRef& b, DType t) {
  return plan.texel ? in_texels(b, texel_format(t)) : in(b);
}

}  // namespace

uint32_t layer_norm_rows_per_part(uint32_t rows) {
  return std::max(32u, ceil_div(rows, 256));
}

uint64_t layer_norm_backward_scratch_bytes(uint32_t rows, uint32_t d) {
  return uint64_t{2} * ceil_div(rows, layer_norm_rows_per_part(rows)) * d * 4;
}

void layer_norm_forward(Device& dev, Recorder& rec, const LayerNormForwardArgs& a) {
  const char* op = "layer_norm_forward";
  check_shape(a.rows, a.d, op);
  check_dtype(dev, a.dtype, op);
  const uint64_t n = uint64_t{a.rows} * a.d;
  const bool residual = a.s.valid();
  need(a.x, n, "x", op, a.dtype);
  need(a.gamma, a.d, "gamma", op);
  need(a.beta, a.d, "beta", op);
  need(a.y, n, "y", op, a.dtype);
  need(a.mean, a.rows, "mean", op);
  need(a.rstd, a.rows, "rstd", op);
  if (residual) {
    need(a.s, n, "s", op, a.dtype);
    need(a.h, n, "h", op, a.dtype);
  }
  if (a.dropout < 0.0f || a.dropout >= 1.0f)
    throw Error(std::string(op) + ": dropout " + std::to_string(a.dropout) + " not in [0, 1)");
  const bool dropout = residual && a.dropout > 0.0f;
  if (dropout) need_step(a.step, op);

  struct {
    uint32_t rows, d;
    float eps, p;
    uint32_t tensor_id, residual, rows_per_group, batch_row_rows;
  } push{
      a.rows,          a.d, a.eps, dropout ? a.dropout : 0.0f, a.tensor_id, residual ? 1u : 0u, 1,
      a.batch_row_rows};
  const BufferRef& s = residual ? a.s : a.x;
  const std::array<TexelInput, 4> viewed{
      {{a.x, a.dtype}, {s, a.dtype}, {a.gamma, DType::f32}, {a.beta, DType::f32}}};
  const RowPlan plan =
      plan_rows(dev, {a.reduce, a.workgroup_size, a.reads, a.dtype, false, a.rows, a.d, viewed},
                "layer_norm_forward", op);
  push.rows_per_group = plan.rows_per_group;
  KernelSpec spec{
      with_dtype(plan.kernel, a.dtype), 9, sizeof push, {plan.workgroup_size, plan.kept_runs}};
  if (plan.texel) spec.texel_buffers = 0xFu;  // bindings 0..3
  const Kernel& k = dev.kernel(spec);
  // Unused bindings get a buffer the kernel never touches in that mode, declared as read so
  // that they add no dependencies (h aliases y in plain mode and is declared with y's write).
  rec.dispatch(
      k,
      {read_arg(plan, a.x, a.dtype), read_arg(plan, s, a.dtype),
       read_arg(plan, a.gamma, DType::f32), read_arg(plan, a.beta, DType::f32), out(a.y),
       residual ? inout(a.h) : out(a.y), out(a.mean), out(a.rstd), in(dropout ? a.step : a.gamma)},
      push, plan.groups);
}

void layer_norm_backward(Device& dev, Recorder& rec, const LayerNormBackwardArgs& a) {
  const char* op = "layer_norm_backward";
  check_shape(a.rows, a.d, op);
  check_dtype(dev, a.dtype, op);
  const uint64_t n = uint64_t{a.rows} * a.d;
  const bool residual = a.ds.valid();
  need(a.dy, n, "dy", op, a.dtype);
  need(a.h, n, "h", op, a.dtype);
  need(a.gamma, a.d, "gamma", op);
  need(a.mean, a.rows, "mean", op);
  need(a.rstd, a.rows, "rstd", op);
  need(a.dx, n, "dx", op, a.dtype);
  need(a.dgamma, a.d, "dgamma", op);
  need(a.dbeta, a.d, "dbeta", op);
  if (residual) need(a.ds, n, "ds", op, a.dtype);
  const uint64_t scratch_bytes = layer_norm_backward_scratch_bytes(a.rows, a.d);
  if (!a.scratch.valid() || a.scratch.size < scratch_bytes)
    throw Error(std::string(op) + ": scratch has " + std::to_string(a.scratch.size) +
                " bytes, needs " + std::to_string(scratch_bytes));
  if (a.dropout < 0.0f || a.dropout >= 1.0f)
    throw Error(std::string(op) + ": dropout " + std::to_string(a.dropout) + " not in [0, 1)");
  const bool dropout = residual && a.dropout > 0.0f;
  if (dropout) need_step(a.step, op);

  struct {
    uint32_t rows, d;
    float p;
    uint32_t tensor_id, residual, accumulate, rows_per_group, batch_row_rows;
  } push{a.rows,
         a.d,
         dropout ? a.dropout : 0.0f,
         a.tensor_id,
         residual ? 1u : 0u,
         a.accumulate_dx ? 1u : 0u,
         1,
         a.batch_row_rows};
  const std::array<TexelInput, 3> viewed{{{a.dy, a.dtype}, {a.h, a.dtype}, {a.gamma, DType::f32}}};
  const RowPlan plan =
      plan_rows(dev, {a.reduce, a.workgroup_size, a.reads, a.dtype, true, a.rows, a.d, viewed},
                "layer_norm_backward", op);
  push.rows_per_group = plan.rows_per_group;
  KernelSpec spec{
      with_dtype(plan.kernel, a.dtype), 8, sizeof push, {plan.workgroup_size, plan.kept_runs}};
  if (plan.texel) spec.texel_buffers = 0x7u;  // bindings 0..2
  const Kernel& k = dev.kernel(spec);
  rec.dispatch(k,
               {read_arg(plan, a.dy, a.dtype), read_arg(plan, a.h, a.dtype),
                read_arg(plan, a.gamma, DType::f32), in(a.mean), in(a.rstd),
                a.accumulate_dx ? inout(a.dx) : out(a.dx), residual ? out(a.ds) : out(a.dx),
                in(dropout ? a.step : a.gamma)},
               push, plan.groups);

  // dgamma, dbeta: partial sums over chunks of rows, then the chunks in order.
  const uint32_t rpp = layer_norm_rows_per_part(a.rows);
  const uint32_t parts = ceil_div(a.rows, rpp);
  struct {
    uint32_t rows, d, parts, rows_per_part;
  } ppush{a.rows, a.d, parts, rpp};
  const Kernel& kp = dev.kernel(
      {with_dtype("layer_norm_dparams_partial", a.dtype), 5, sizeof ppush, {k_param_local}});
  rec.dispatch(kp, {in(a.dy), in(a.h), in(a.mean), in(a.rstd), out(a.scratch)}, ppush,
               {ceil_div(a.d, k_param_local), parts, 1});
  struct {
    uint32_t d, parts, accumulate;
  } rpush{a.d, parts, a.accumulate_params ? 1u : 0u};
  const Kernel& kr = dev.kernel({"layer_norm_dparams_reduce", 3, sizeof rpush, {k_param_local}});
  auto param = [&](const BufferRef& b) { return a.accumulate_params ? inout(b) : out(b); };
  rec.dispatch(kr, {in(a.scratch), param(a.dgamma), param(a.dbeta)}, rpush,
               groups_1d(a.d, k_param_local));
}

}  // namespace vkf::ops
