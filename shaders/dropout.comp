#version 450
// Inverted dropout y = x * dropout_scale(p, seed, step, tensor, i). The backward pass is the
// same kernel on dy: the Philox mask is a pure function of (seed, step, tensor, element).
// One invocation handles four consecutive elements, the four lanes of one Philox block
// (philox_uniform() draws element i from lane i & 3 of block i >> 2), so the generator runs
// once per four elements.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
#include "philox.glsl"
#include "step.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };   // [n]
layout(std430, binding = 1) writeonly buffer Y { float y[]; };  // [n]
layout(std430, binding = 2) readonly buffer Step { StepScalars st; };
layout(push_constant) uniform Push {
  uint n;
  float p;
  uint tensor_id;
} pc;

void main() {
  uint block = global_index_1d();
  uint i0 = block * 4u;
  if (i0 >= pc.n) return;
  vec4 scale = vec4(1.0);
  if (pc.p > 0.0) {
    // Same arithmetic as philox_uniform() and dropout_scale(), for four lanes at once.
    uvec4 r = philox4x32_10(uvec4(block, pc.tensor_id, st.step, 0u), uvec2(st.seed, 0x5EEDu));
    vec4 u = vec4(r >> 8u) * (1.0 / 16777216.0);
    scale = mix(vec4(1.0 / (1.0 - pc.p)), vec4(0.0), lessThan(u, vec4(pc.p)));
  }
  for (uint k = 0u; k < 4u && i0 + k < pc.n; ++k) y[i0 + k] = x[i0 + k] * scale[k];
}
