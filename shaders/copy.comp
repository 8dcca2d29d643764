#version 450
// Strided 2-D copy of 32-bit words (f32 or i32): dst[dst_offset + r * dst_stride + c] =
// src[src_offset + r * src_stride + c] for r < rows, c < cols. Offsets are in elements, so views
// need not meet the descriptor offset alignment. A 1-D copy is rows = 1.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint src_offset;
  uint src_stride;
  uint dst_offset;
  uint dst_stride;
} p;
void main() {
  uint i = global_index_1d();
  if (i >= p.rows * p.cols) return;
  uint r = i / p.cols, c = i - r * p.cols;
  dst[p.dst_offset + r * p.dst_stride + c] = src[p.src_offset + r * p.src_stride + c];
}
