#version 450
// Row copies whose source or destination rows come from int32 buffers written by the host (or
// another kernel), so a recorded sequence can be replayed with new indices. For r < rows and
// c < n:
//   dst[r * dst_stride + (dst_index ? dst_index[r] * dst_index_stride : 0) + c]
//     = src[(src_index ? src_index[r] : r) * src_stride + c]
// n = cols, or min(cols, limit[0] * limit_unit) when a limit buffer is bound (copy only the
// leading part of each row, e.g. the positions filled so far). A row whose index is negative or
// not below src_rows / dst_index_count is skipped; the host checks that every other access is
// inside the buffers. One workgroup row per copied row (gl_WorkGroupID.y, .z), column blocks
// strided over gl_WorkGroupID.x.
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 2) readonly buffer SrcIndex { int src_index[]; };
layout(std430, binding = 3) readonly buffer DstIndex { int dst_index[]; };
layout(std430, binding = 4) readonly buffer Limit { int limit[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint src_stride;
  uint dst_stride;
  uint dst_index_stride;
  uint limit_unit;
  uint flags;            // 1: src_index bound, 2: dst_index bound, 4: limit bound
  uint src_rows;         // valid values of src_index[r]: 0 .. src_rows - 1
  uint dst_index_count;  // valid values of dst_index[r]: 0 .. dst_index_count - 1
} p;

void main() {
  uint r = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (r >= p.rows) return;
  uint n = p.cols;
  if ((p.flags & 4u) != 0u) {
    int l = limit[0];
    uint whole = (p.cols + p.limit_unit - 1u) / p.limit_unit;  // units covering every column
    n = l <= 0 ? 0u : (uint(l) >= whole ? p.cols : uint(l) * p.limit_unit);
  }
  uint s_row = r;
  if ((p.flags & 1u) != 0u) {
    int i = src_index[r];
    if (i < 0 || uint(i) >= p.src_rows) return;
    s_row = uint(i);
  }
  uint d_base = r * p.dst_stride;
  if ((p.flags & 2u) != 0u) {
    int i = dst_index[r];
    if (i < 0 || uint(i) >= p.dst_index_count) return;
    d_base += uint(i) * p.dst_index_stride;
  }
  uint s_base = s_row * p.src_stride;
  uint step = gl_WorkGroupSize.x * gl_NumWorkGroups.x;
  for (uint c = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x; c < n; c += step)
    dst[d_base + c] = src[s_base + c];
}
