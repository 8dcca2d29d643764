#include "engine/ops/elementwise.h"

#include <algorithm>
#include <bit>
#include <string>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/basic.h"

namespace vkf::ops {

namespace {

void need_floats(const BufferRef& b, uint64_t n, const std::string& what) {
  if (b.size < n * 4)
    throw Error(what + ": needs " + std::to_string(n) + " 32-bit elements (" +
                std::to_string(n * 4) + " bytes) but its buffer has " + std::to_string(b.size));
}

constexpr uint32_t k_reduce_chunk = 8192;  // elements per partial in reduce_all

}  // namespace

const char* row_reads_name(RowKernelConfig::Reads r) {
  return r == RowKernelConfig::Reads::texel     ? "texel"
         : r == RowKernelConfig::Reads::storage ? "storage"
                                                : "automatic";
}

RowKernelConfig::Reads parse_row_reads(const std::string& name, const char* family) {
  if (name == "texel") return RowKernelConfig::Reads::texel;
  if (name == "storage") return RowKernelConfig::Reads::storage;
  if (!name.empty() && name != "automatic")
    throw Error(std::string(family) + " reads '" + name + "' is not texel, storage or automatic");
  return RowKernelConfig::Reads::automatic;
}

std::string workgroup_size_misfit(const DeviceInfo& info, uint32_t wg) {
  if (wg < 32 || wg > 1024 || (wg & (wg - 1)) != 0)
    return "workgroup size " + std::to_string(wg) + " is not a power of two in 32..1024";
  if (wg > info.max_workgroup_invocations || wg > info.max_workgroup_size[0])
    return "workgroup size " + std::to_string(wg) + " exceeds the device's " +
           std::to_string(info.max_workgroup_invocations);
  return "";
}

uint32_t resolve_workgroup_size(const Device& dev, uint32_t requested, const char* op) {
  // The default: 256, or the largest power of two the device allows below it (a device may
  // allow as few as 128 invocations, Vulkan's minimum); the kernels' reductions need a power
  // of two. A size the caller asks for is checked as it is.
  uint32_t wg = requested;
  if (wg == 0) {
    const DeviceInfo& info = dev.info();
    const uint32_t cap =
        std::min({256u, info.max_workgroup_invocations ? info.max_workgroup_invocations : 256u,
                  info.max_workgroup_size[0] ? info.max_workgroup_size[0] : 256u});
    wg = std::bit_floor(cap);
  }
  if (const std::string why = workgroup_size_misfit(dev.info(), wg); !why.empty())
    throw Error(std::string(op) + ": " + why);
  return wg;
}

bool resolve_subgroup(const Device& dev, RowKernelConfig::Subgroup s, const char* op) {
  if (s == RowKernelConfig::Subgroup::off) return false;
  bool have = dev.info().subgroup_arithmetic;
  if (s == RowKernelConfig::Subgroup::on && !have)
    throw Error(std::string(op) + ": subgroup path forced but " + dev.label() +
                " has no subgroup arithmetic in compute");
  return have;
}

std::array<uint32_t, 3> row_groups(uint32_t rows) {
  if (rows == 0) throw Error("row kernel with 0 rows");
  if (rows <= 65535) return {rows, 1, 1};
  return {65535, ceil_div(rows, 65535), 1};
}

void check_storage_dtype(const Device& dev, DType t, const std::string& op) {
  if (t != DType::f32 && t != DType::f16)
    throw Error(op + ": dtype " + dtype_name(t) + " is not supported (f32 or f16)");
  if (t == DType::f16 && !dev.info().storage16)
    throw Error(op + ": f16 storage needs 16-bit storage buffers, which " + dev.info().name +
                " does not support");
}

std::string kernel_for_dtype(std::string kernel, DType t) {
  return t == DType::f16 ? kernel + "_f16" : kernel;
}

void scale(Device& dev, Recorder& rec, const ScaleArgs& a) {
  need_floats(a.x, a.n, "scale x");
  need_floats(a.y, a.n, "scale y");
  bool use_scalar = a.scalars.valid();
  if (use_scalar) need_floats(a.scalars, uint64_t{a.scalar_index} + 1, "scale scalars");
  struct {
    uint32_t n;
    float alpha;
    uint32_t scalar_index;
  } push{a.n, a.alpha, use_scalar ? a.scalar_index : ~0u};
  const Kernel& k = dev.kernel({"scale", 3, sizeof push, {k_local_1d}});
  // Without a scalar buffer binding 2 is x again (never read).
  const BufferRef& s = use_scalar ? a.scalars : a.x;
  if (a.x.overlaps(a.y))
    rec.dispatch(k, {inout(a.x), out(a.y), in(s)}, push, groups_1d(a.n, k_local_1d));
  else
    rec.dispatch(k, {in(a.x), out(a.y), in(s)}, push, groups_1d(a.n, k_local_1d));
}

void copy(Device& dev, Recorder& rec, const CopyArgs& a) {
  uint32_t ss = a.src_stride ? a.src_stride : a.cols, ds = a.dst_stride ? a.dst_stride : a.cols;
  if (a.rows == 0 || a.cols == 0)
    throw Error("copy: empty [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) +
                "] block");
  if (ss < a.cols || ds < a.cols)
    throw Error("copy: stride " + std::to_string(std::min(ss, ds)) + " smaller than " +
                std::to_string(a.cols) + " columns");
  need_floats(a.src, uint64_t{a.src_offset} + uint64_t{a.rows - 1} * ss + a.cols, "copy source");
  need_floats(a.dst, uint64_t{a.dst_offset} + uint64_t{a.rows - 1} * ds + a.cols,
              "copy destination");
  if (a.src.overlaps(a.dst)) throw Error("copy: source and destination overlap");
  struct {
    uint32_t rows, cols, src_offset, src_stride, dst_offset, dst_stride;
  } push{a.rows, a.cols, a.src_offset, ss, a.dst_offset, ds};
  const Kernel& k = dev.kernel({"copy", 2, sizeof push, {k_local_1d}});
  rec.dispatch(k, {in(a.src), out(a.dst)}, push, groups_1d(uint64_t{a.rows} * a.cols, k_local_1d));
}

static void cast(Device& dev, Recorder& rec, const CastArgs& a, bool to_f16, bool drain = false) {
  const char* name = to_f16 ? "cast_f32_f16" : drain ? "cast_drain_f16_f32" : "cast_f16_f32";
  if (!dev.info().storage16)
    throw Error(std::string(name) + ": " + dev.label() + " has no 16-bit storage");
  uint64_t in_bytes = uint64_t{a.n} * (to_f16 ? 4 : 2),
           out_bytes = uint64_t{a.n} * (to_f16 ? 2 : 4);
  if (a.x.size < in_bytes || a.y.size < out_bytes)
    throw Error(std::string(name) + ": " + std::to_string(a.n) + " elements need " +
                std::to_string(in_bytes) + " and " + std::to_string(out_bytes) +
                " bytes, buffers have " + std::to_string(a.x.size) + " and " +
                std::to_string(a.y.size));
  if (a.x.overlaps(a.y)) throw Error(std::string(name) + ": x and y overlap");
  uint32_t push = a.n;
  const Kernel& k = dev.kernel({name, 2, sizeof push, {k_local_1d}});
  if (drain)
    rec.dispatch(k, {inout(a.x), inout(a.y)}, push, groups_1d(a.n, k_local_1d));
  else
    rec.dispatch(k, {in(a.x), out(a.y)}, push, groups_1d(a.n, k_local_1d));
}

void cast_f32_to_f16(Device& dev, Recorder& rec, const CastArgs& a) {
  cast(dev, rec, a, true);
}
void cast_f16_to_f32(Device& dev, Recorder& rec, const CastArgs& a) {
  cast(dev, rec, a, false);
}
void drain_f16_into_f32(Device& dev, Recorder& rec, const CastArgs& a) {
  cast(dev, rec, a, false, true);
}

namespace {
void reduce_dispatch(Device& dev, Recorder& rec, const BufferRef& x, const BufferRef& y,
                     uint32_t rows, uint32_t cols, uint32_t total, float scale, uint32_t wg) {
  struct {
    uint32_t rows, cols, total;
    float scale;
  } push{rows, cols, total, scale};
  const Kernel& k = dev.kernel({"reduce", 2, sizeof push, {wg}});
  rec.dispatch(k, {in(x), out(y)}, push, row_groups(rows));
}
}  // namespace

void reduce_rows(Device& dev, Recorder& rec, const ReduceRowsArgs& a) {
  if (a.rows == 0 || a.cols == 0)
    throw Error("reduce_rows: empty [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) +
                "]");
  uint64_t total = uint64_t{a.rows} * a.cols;
  if (total > 0xffffffffull) throw Error("reduce_rows: more than 2^32 elements");
  need_floats(a.x, total, "reduce_rows x");
  need_floats(a.y, a.rows, "reduce_rows y");
  uint32_t wg = resolve_workgroup_size(dev, a.workgroup_size, "reduce_rows");
  reduce_dispatch(dev, rec, a.x, a.y, a.rows, a.cols, static_cast<uint32_t>(total),
                  a.mean ? float(1.0 / a.cols) : 1.0f, wg);
}

uint64_t reduce_all_partials_bytes(uint32_t n) {
  return uint64_t{ceil_div(n, k_reduce_chunk)} * 4;
}

void reduce_all(Device& dev, Recorder& rec, const ReduceAllArgs& a) {
  if (a.n == 0) throw Error("reduce_all: no elements");
  need_floats(a.x, a.n, "reduce_all x");
  need_floats(a.y, 1, "reduce_all y");
  uint32_t parts = ceil_div(a.n, k_reduce_chunk);
  need_floats(a.partials, parts, "reduce_all partials");
  if (a.partials.overlaps(a.x) || a.partials.overlaps(a.y))
    throw Error("reduce_all: partials overlap x or y");
  uint32_t wg = resolve_workgroup_size(dev, a.workgroup_size, "reduce_all");
  reduce_dispatch(dev, rec, a.x, a.partials, parts, k_reduce_chunk, a.n, 1.0f, wg);
  reduce_dispatch(dev, rec, a.partials, a.y, 1, parts, parts, a.mean ? float(1.0 / a.n) : 1.0f, wg);
}

}  // namespace vkf::ops
