#version 450
// fp32 <-> fp16 conversion of n elements, y may not alias x. Needs only 16-bit storage (no fp16
// arithmetic): the conversion happens on load/store.
// vkf-variant-only
// vkf-variant: cast_f32_f16 VKF_TO_F16=1
// vkf-variant: cast_f16_f32 VKF_TO_F32=1
// cast_drain_f16_f32: y += float(x), then x = 0 (mixed-precision training moves each backward's
// fp16 weight gradients into the fp32 accumulators and leaves the fp16 ones zeroed for the next).
// vkf-variant: cast_drain_f16_f32 VKF_TO_F32=1 VKF_DRAIN=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
#ifdef VKF_TO_F16
layout(std430, binding = 0) readonly buffer X { float x[]; };        // [n]
layout(std430, binding = 1) writeonly buffer Y { float16_t y[]; };   // [n]
#elif defined(VKF_DRAIN)
layout(std430, binding = 0) buffer X { float16_t x[]; };             // [n]
layout(std430, binding = 1) buffer Y { float y[]; };                 // [n]
#else
layout(std430, binding = 0) readonly buffer X { float16_t x[]; };    // [n]
layout(std430, binding = 1) writeonly buffer Y { float y[]; };       // [n]
#endif
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = global_index_1d();
  if (i >= p.n) return;
#ifdef VKF_TO_F16
  y[i] = float16_t(x[i]);
#elif defined(VKF_DRAIN)
  y[i] += float(x[i]);
  x[i] = float16_t(0.0);
#else
  y[i] = float(x[i]);
#endif
}
