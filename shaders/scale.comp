#version 450
// y[i] = alpha * s * x[i] with s = scalars[scalar_index] (a per-step value, e.g. the loss scale)
// or 1 when scalar_index is ~0u. y may alias x.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer X { float x[]; };                 // [n]
layout(std430, binding = 1) writeonly buffer Y { float y[]; };       // [n]
layout(std430, binding = 2) readonly buffer S { float scalars[]; };
layout(push_constant) uniform Push {
  uint n;
  float alpha;
  uint scalar_index;
} p;
void main() {
  uint i = global_index_1d();
  if (i >= p.n) return;
  float a = p.alpha;
  if (p.scalar_index != 0xffffffffu) a *= scalars[p.scalar_index];
  y[i] = a * x[i];
}
