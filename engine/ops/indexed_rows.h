#pragma once
// Row copies driven by index buffers, so a recorded sequence replays with indices the host
// writes before each submit: gather_rows (dst row r = src row index[r], e.g. reordering per-row
// state after a selection step) and scatter_rows (src row r goes to slot position[r] of dst row
// r, e.g. appending to a per-row history). Kernel: shaders/indexed_rows.comp.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::ops {

// dst[r * dst_stride + c] = src[index[r] * src_stride + c] for r < rows, c < n, where
// n = cols, or min(cols, limit[0] * limit_unit) when `limit` is given. Rows whose index is
// outside [0, src_rows) are left untouched. 32-bit words (f32 or i32).
struct GatherRowsArgs {
  BufferRef src;    // [src_rows, src_stride] words
  BufferRef dst;    // [rows, dst_stride] words; must not overlap src
  BufferRef index;  // int32 [rows]; invalid = identity (r)
  BufferRef limit;  // optional int32 [1]: copy only the first limit[0] * limit_unit columns
  uint32_t rows = 0, cols = 0;
  uint32_t src_rows = 0;    // 0 = rows
  uint32_t src_stride = 0;  // in words; 0 = cols
  uint32_t dst_stride = 0;  // in words; 0 = cols
  uint32_t limit_unit = 1;
};
void gather_rows(Device& dev, Recorder& rec, const GatherRowsArgs& a);

// dst[r * dst_stride + position[r] * position_stride + c] = src[r * src_stride + c] for
// r < rows, c < cols. Rows whose position is outside [0, positions) are skipped.
struct ScatterRowsArgs {
  BufferRef src;       // [rows, src_stride] words
  BufferRef dst;       // [rows, dst_stride] words; must not overlap src
  BufferRef position;  // int32 [rows]
  uint32_t rows = 0, cols = 0;
  uint32_t positions = 0;        // slots per dst row
  uint32_t position_stride = 0;  // words between slots; 0 = cols
  uint32_t src_stride = 0;       // 0 = cols
  uint32_t dst_stride = 0;       // 0 = positions * position_stride
};
void scatter_rows(Device& dev, Recorder& rec, const ScatterRowsArgs& a);

}  // namespace vkf::ops
