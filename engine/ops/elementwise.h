#pragma once
// Small ops: scale, strided copy, fp32 <-> fp16 casts and deterministic sum/mean reductions.
// Kernels: shaders/scale.comp, copy.comp, cast.comp, reduce.comp.
#include <array>
#include <cstdint>
#include <string>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

// How a one-workgroup-per-row kernel is specialised. The defaults pick from the device; tests
// force every value so each path a device could take runs on lavapipe too.
struct RowKernelConfig {
  uint32_t workgroup_size = 0;  // power of two in 32..1024; 0 = device default
  enum class Subgroup { automatic, on, off } subgroup = Subgroup::automatic;
  // How the kernel reads its large input (cross-entropy's logits; other row kernels read
  // storage buffers only): through a uniform texel buffer or a storage buffer. Mesa 22.3's
  // lavapipe loads a storage buffer a lane at a time and a texel buffer as a vector (a copy
  // runs 5x faster through one); later ones do not, and run the loss slower through a view.
  // automatic: the default, the storage buffer (ops::row_kernel_default_config); the tuner
  // times the view.
  enum class Reads { automatic, storage, texel } reads = Reads::automatic;
};
// "automatic", "storage", "texel": the reads in a tuning file.
const char* row_reads_name(RowKernelConfig::Reads r);
// `name` as reads ("" and "automatic": automatic); Error naming `family` for anything else.
RowKernelConfig::Reads parse_row_reads(const std::string& name, const char* family);
// Why `info`'s device cannot run a 1-D workgroup of `wg` invocations as the row kernels and Adam
// take it (a power of two in 32..1024 within the device's limits); "" when it can.
std::string workgroup_size_misfit(const DeviceInfo& info, uint32_t wg);
// Resolves the defaults; throws when a forced value is not supported by the device.
uint32_t resolve_workgroup_size(const Device& dev, uint32_t requested, const char* op);
bool resolve_subgroup(const Device& dev, RowKernelConfig::Subgroup s, const char* op);
// {x, y, 1} groups covering `rows` workgroups (x capped at 65535).
std::array<uint32_t, 3> row_groups(uint32_t rows);

// Storage type of an op's large tensors: f32, or f16 (fp32 arithmetic) where the device has
// 16-bit storage buffers. Throws an Error naming `op` for any other type or device.
void check_storage_dtype(const Device& dev, DType t, const std::string& op);
// The f16-storage kernels are the variants named with an "_f16" suffix.
std::string kernel_for_dtype(std::string kernel, DType t);

struct ScaleArgs {
  BufferRef x;  // [n] f32
  BufferRef y;  // [n] f32, may be x (in place)
  uint32_t n = 0;
  float alpha = 1.0f;  // y = alpha * s * x
  BufferRef scalars;   // optional: s = scalars[scalar_index] (f32), e.g. StepScalars
  uint32_t scalar_index = 0;
};
void scale(Device& dev, Recorder& rec, const ScaleArgs& a);

// Copies a [rows, cols] block of 32-bit words (f32 or i32) between strided views.
struct CopyArgs {
  BufferRef src;  // words src[src_offset + r * src_stride + c]
  BufferRef dst;  // words dst[dst_offset + r * dst_stride + c]; must not overlap src
  uint32_t rows = 1, cols = 0;
  uint32_t src_offset = 0, src_stride = 0;  // in elements; stride 0 = cols
  uint32_t dst_offset = 0, dst_stride = 0;
};
void copy(Device& dev, Recorder& rec, const CopyArgs& a);

// fp32 <-> fp16; needs 16-bit storage (DeviceInfo::storage16).
struct CastArgs {
  BufferRef x;  // [n] of the source type
  BufferRef y;  // [n] of the other type; must not overlap x
  uint32_t n = 0;
};
void cast_f32_to_f16(Device& dev, Recorder& rec, const CastArgs& a);
void cast_f16_to_f32(Device& dev, Recorder& rec, const CastArgs& a);
// y (f32) += x (f16), then x = 0: fp16 gradients drained into fp32 accumulators.
void drain_f16_into_f32(Device& dev, Recorder& rec, const CastArgs& a);

// Per-row sum or mean: y[r] = reduce over c of x[r, c].
struct ReduceRowsArgs {
  BufferRef x;  // [rows, cols] f32
  BufferRef y;  // [rows] f32
  uint32_t rows = 0, cols = 0;
  bool mean = false;
  uint32_t workgroup_size = 0;  // 0 = 256
};
void reduce_rows(Device& dev, Recorder& rec, const ReduceRowsArgs& a);

// Sum or mean of all n elements into y[0], in two deterministic passes through `partials`.
struct ReduceAllArgs {
  BufferRef x;         // [n] f32
  BufferRef y;         // [1] f32
  BufferRef partials;  // reduce_all_partials_bytes(n) bytes of scratch
  uint32_t n = 0;
  bool mean = false;
  uint32_t workgroup_size = 0;  // 0 = 256
};
uint64_t reduce_all_partials_bytes(uint32_t n);
void reduce_all(Device& dev, Recorder& rec, const ReduceAllArgs& a);

}  // namespace vkf::ops
