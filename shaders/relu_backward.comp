#version 450
// dh[i] = h[i] > 0 ? dh[i] : 0, in place: the ReLU between fc1 and fc2 of the FFN, where h is
// the saved post-ReLU activation (h > 0 exactly where the pre-activation was > 0).
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer H { float h[]; };
layout(std430, binding = 1) buffer DH { float dh[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = global_index_1d();
  if (i < p.n && !(h[i] > 0.0)) dh[i] = 0.0;
}
