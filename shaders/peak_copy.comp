#version 450
// The bandwidth probe behind the benchmarks' ratio_peak: dst[i] = src[i] for i < n elements of
// 32-bit words (VEC4 = 0) or of 4-vectors of them (VEC4 = 1), the plainest copy a shader can do
// (a STREAM "copy"). Which width is faster depends on the device; the probe tries both.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VEC4 = 1;
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 0) readonly buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 1) writeonly buffer Dst4 { uvec4 dst4[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  const uint i = global_index_1d();
  if (i >= p.n) return;
  if (VEC4 != 0)
    dst4[i] = src4[i];
  else
    dst[i] = src[i];
}
