#version 450
// The bandwidth probe behind the benchmarks' ratio_peak: dst[i] = src[i] for i < n elements of
// 32-bit words (VEC4 = 0) or of 4-vectors of them (VEC4 = 1), the plainest copy a shader can do
// (a STREAM "copy"). Which width is faster depends on the device; the probe tries both, and the
// _texel variant, which reads the 4-vectors through a uniform texel buffer (an RGBA32F view):
// Mesa 22.3's lavapipe loads a storage buffer a lane at a time and a texel buffer as a vector
// (there the texel copy ran 5x faster), so the device's copy peak is the best of the three.
// (Float texels: the words are copied as float bit patterns, exact for every non-NaN word.)
// vkf-variant: peak_copy_texel VKF_TEXEL=1
#extension GL_GOOGLE_include_directive : require
#ifdef VKF_TEXEL
#extension GL_EXT_samplerless_texture_functions : require
#endif
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VEC4 = 1;
#ifdef VKF_TEXEL
layout(binding = 0) uniform textureBuffer src_texels;
#else
layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 0) readonly buffer Src4 { uvec4 src4[]; };
#endif
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(std430, binding = 1) writeonly buffer Dst4 { uvec4 dst4[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  const uint i = global_index_1d();
  if (i >= p.n) return;
#ifdef VKF_TEXEL
  dst4[i] = floatBitsToUint(texelFetch(src_texels, int(i)));
#else
  if (VEC4 != 0)
    dst4[i] = src4[i];
  else
    dst[i] = src[i];
#endif
}
