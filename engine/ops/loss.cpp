#include "engine/ops/loss.h"

#include <array>
#include <string>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/loss_choice.h"
#include "engine/step_scalars.h"

namespace vkf::ops {

namespace {
void need_bytes(const BufferRef& b, uint64_t bytes, const std::string& what) {
  if (!b.valid()) throw Error(what + " is missing");
  if (b.size < bytes)
    throw Error(what + ": needs " + std::to_string(bytes) + " bytes but its buffer has " +
                std::to_string(b.size));
}
VkFormat logits_texel_format(DType t) {
  return t == DType::f16 ? VK_FORMAT_R16_SFLOAT : VK_FORMAT_R32_SFLOAT;
}

// Whether cross-entropy reads its logits through a texel view: as `reads` says, automatic being
// the device's default. A view that does not fit the logits' buffer (offset alignment, more
// texels than the device's limit) is an error when the caller forced texel reads, and falls
// back to the storage buffer when they came from the default or the tuning.
bool texel_reads(const Device& dev, const CrossEntropyArgs& a, RowKernelConfig::Reads reads,
                 bool forced, const std::string& op) {
  const bool asked = forced && reads == RowKernelConfig::Reads::texel;
  if (reads == RowKernelConfig::Reads::automatic)
    reads = row_kernel_default_config(dev.info()).reads;
  if (reads != RowKernelConfig::Reads::texel) return false;
  std::string why = texel_view_misfit(dev.info(), a.logits, logits_texel_format(a.dtype));
  if (why.empty() && uint64_t{a.rows} * a.vocab > 0x7fffffffu)
    why = "more than 2^31 logits (texelFetch takes an int)";
  if (why.empty()) return true;
  if (asked) throw Error(op + ": the logits cannot be read through a texel view: " + why);
  return false;
}

std::string shape(uint32_t rows, uint32_t cols) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) on "[" + std::to_string(...).
  std::string s = "[";
  s += std::to_string(rows);
  s += ", ";
  s += std::to_string(cols);
  s += "]";
  return s;
}
}  // namespace

void cross_entropy(Device& dev, Recorder& rec, const CrossEntropyArgs& a) {
  const std::string op = "cross_entropy " + shape(a.rows, a.vocab);
  if (a.rows == 0 || a.vocab == 0) throw Error(op + ": empty logits");
  uint64_t elems = uint64_t{a.rows} * a.vocab;
  if (elems > 0xffffffffull) throw Error(op + ": more than 2^32 logits");
  if (!(a.label_smoothing >= 0.0f && a.label_smoothing < 1.0f))
    throw Error(op + ": label smoothing " + std::to_string(a.label_smoothing) + " outside [0, 1)");
  check_storage_dtype(dev, a.dtype, op);
  const uint64_t bytes = elems * dtype_bytes(a.dtype);
  need_bytes(a.logits, bytes, op + " logits");
  need_bytes(a.targets, uint64_t{a.rows} * 4, op + " targets");
  need_bytes(a.row_loss, uint64_t{a.rows} * 4, op + " row_loss");
  need_bytes(a.row_logp, uint64_t{a.rows} * 4, op + " row_logp");
  bool grad = a.dlogits.valid();
  if (grad) {
    need_bytes(a.dlogits, bytes, op + " dlogits");
    need_bytes(a.step, sizeof(StepScalars), op + " step scalars");
    if (a.dlogits.overlaps(a.logits) &&
        (a.dlogits.buffer != a.logits.buffer || a.dlogits.offset != a.logits.offset))
      throw Error(op + ": dlogits overlaps logits without being the same range");
  }
  // Nothing forced: the device's tuning for the shape class, else the default.
  const bool forced = a.config.workgroup_size != 0 ||
                      a.config.subgroup != RowKernelConfig::Subgroup::automatic ||
                      a.config.reads != RowKernelConfig::Reads::automatic;
  const RowKernelConfig config =
      forced ? a.config
             : choose_cross_entropy(dev.info(), dev.tuning(), {a.dtype, a.rows, a.vocab}).config;
  uint32_t wg = resolve_workgroup_size(dev, config.workgroup_size, "cross_entropy");
  bool sg = resolve_subgroup(dev, config.subgroup, "cross_entropy");
  const bool texel = texel_reads(dev, a, config.reads, forced, op);
  std::string name = grad ? "cross_entropy" : "cross_entropy_nograd";
  if (sg) name += "_sg";
  if (texel) name += "_texel";
  name = kernel_for_dtype(name, a.dtype);
  struct {
    uint32_t rows, vocab;
    int32_t pad_id;
    float eps;
  } push{a.rows, a.vocab, a.pad_id, a.label_smoothing};
  // Binding 2 is only read for the gradient; without one any valid buffer stands in.
  const BufferRef& step = a.step.valid() ? a.step : a.targets;
  // In place, the logits are read through binding 0 and overwritten through binding 5: declared
  // read-write on a storage binding, and as the texel view plus the written range otherwise.
  const bool in_place = grad && a.dlogits.overlaps(a.logits);
  const Arg logits = texel      ? in_texels(a.logits, logits_texel_format(a.dtype))
                     : in_place ? inout(a.logits)
                                : in(a.logits);
  KernelSpec spec{name, grad ? 6u : 5u, sizeof push, {wg}};
  if (texel) spec.texel_buffers = 1u;  // binding 0
  const Kernel& k = dev.kernel(spec);
  if (grad)
    rec.dispatch(
        k, {logits, in(a.targets), in(step), out(a.row_loss), out(a.row_logp), out(a.dlogits)},
        push, row_groups(a.rows));
  else
    rec.dispatch(k, {logits, in(a.targets), in(step), out(a.row_loss), out(a.row_logp)}, push,
                 row_groups(a.rows));
}

void cross_entropy_total(Device& dev, Recorder& rec, const CrossEntropyTotalArgs& a) {
  const std::string op = "cross_entropy_total over " + std::to_string(a.rows) + " rows";
  if (a.rows == 0) throw Error(op + ": no rows");
  need_bytes(a.row_loss, uint64_t{a.rows} * 4, op + " row_loss");
  need_bytes(a.row_logp, uint64_t{a.rows} * 4, op + " row_logp");
  need_bytes(a.targets, uint64_t{a.rows} * 4, op + " targets");
  need_bytes(a.out, sizeof(CrossEntropyTotals), op + " out");
  uint32_t wg = resolve_workgroup_size(dev, a.workgroup_size, "cross_entropy_total");
  struct {
    uint32_t rows, vocab;
    int32_t pad_id;
  } push{a.rows, a.vocab, a.pad_id};
  const Kernel& k = dev.kernel({"cross_entropy_total", 4, sizeof push, {wg}});
  rec.dispatch(k, {in(a.row_loss), in(a.row_logp), in(a.targets), out(a.out)}, push, {1, 1, 1});
}

namespace {

// What log_softmax and log_sum_exp check of x ([rows, cols] of dtype); its size in bytes.
uint64_t check_softmax_rows(const Device& dev, DType dtype, const BufferRef& x, uint32_t rows,
                            uint32_t cols, const std::string& op) {
  if (rows == 0 || cols == 0) throw Error(op + ": empty input");
  const uint64_t elems = uint64_t{rows} * cols;
  if (elems > 0xffffffffull) throw Error(op + ": more than 2^32 elements");
  check_storage_dtype(dev, dtype, op);
  need_bytes(x, elems * dtype_bytes(dtype), op + " x");
  return elems * dtype_bytes(dtype);
}

// log_softmax.comp's variant `name` (log_softmax, log_sum_exp) for the configuration and dtype.
const Kernel& softmax_rows_kernel(Device& dev, const std::string& name, DType dtype,
                                  const RowKernelConfig& config) {
  const uint32_t wg = resolve_workgroup_size(dev, config.workgroup_size, name.c_str());
  const bool sg = resolve_subgroup(dev, config.subgroup, name.c_str());
  return dev.kernel({kernel_for_dtype(sg ? name + "_sg" : name, dtype), 2, 2 * 4, {wg}});
}

}  // namespace

void log_softmax(Device& dev, Recorder& rec, const LogSoftmaxArgs& a) {
  const std::string op = "log_softmax " + shape(a.rows, a.cols);
  need_bytes(a.y, check_softmax_rows(dev, a.dtype, a.x, a.rows, a.cols, op), op + " y");
  bool in_place = a.y.overlaps(a.x);
  if (in_place && (a.y.buffer != a.x.buffer || a.y.offset != a.x.offset))
    throw Error(op + ": y overlaps x without being the same range");
  const Kernel& k = softmax_rows_kernel(dev, "log_softmax", a.dtype, a.config);
  const std::array<uint32_t, 2> push{a.rows, a.cols};
  rec.dispatch(k, {in_place ? inout(a.x) : in(a.x), out(a.y)}, push, row_groups(a.rows));
}

void log_sum_exp(Device& dev, Recorder& rec, const LogSumExpArgs& a) {
  const std::string op = "log_sum_exp " + shape(a.rows, a.cols);
  check_softmax_rows(dev, a.dtype, a.x, a.rows, a.cols, op);
  need_bytes(a.lse, uint64_t{a.rows} * 4, op + " lse");
  if (a.lse.overlaps(a.x)) throw Error(op + ": lse overlaps x");
  const Kernel& k = softmax_rows_kernel(dev, "log_sum_exp", a.dtype, a.config);
  const std::array<uint32_t, 2> push{a.rows, a.cols};
  rec.dispatch(k, {in(a.x), out(a.lse)}, push, row_groups(a.rows));
}

}  // namespace vkf::ops
