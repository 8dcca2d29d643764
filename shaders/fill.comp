#version 450
// y[i] = value for i < n. Used to initialise and to poison buffers.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; float value; } p;
void main() {
  uint i = global_index_1d();
  if (i < p.n) y[i] = p.value;
}
