#version 450
// Inverted dropout y = x * dropout_scale(p, seed, step, tensor, i). The backward pass is the
// same kernel on dy: the Philox mask is a pure function of (seed, step, tensor, element).
// One invocation handles four consecutive elements, the four words of one Philox block
// (dropout_block_scales()), so the generator runs once per four elements.
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
  // The step buffer is bound only when dropout is on.
  vec4 scale =
      pc.p > 0.0 ? dropout_block_scales(pc.p, st.seed, st.step, pc.tensor_id, block) : vec4(1.0);
  for (uint k = 0u; k < 4u && i0 + k < pc.n; ++k) y[i0 + k] = x[i0 + k] * scale[k];
}
