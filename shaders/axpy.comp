#version 450
// y[i] = alpha * x[i] + y[i], with alpha read from a per-step scalar buffer so a recorded
// sequence can be replayed with a new alpha without re-recording.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer S { float scalars[]; };
layout(push_constant) uniform Push { uint n; uint alpha_index; } p;
void main() {
  uint i = global_index_1d();
  if (i < p.n) y[i] = scalars[p.alpha_index] * x[i] + y[i];
}
