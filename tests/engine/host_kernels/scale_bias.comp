#version 450
// A host application's own kernel, compiled by the test build with glslc as a host's build
// would (tests/CMakeLists.txt): y = scale * x + bias, with the workgroup size and the bias as
// specialization constants and n and scale as push constants.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const float k_bias = 0.0;

layout(push_constant) uniform Push {
  uint n;
  float scale;
} p;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < p.n) y[i] = p.scale * x[i] + k_bias;
}
