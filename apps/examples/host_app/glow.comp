#version 450
// The host application's own kernel (a stand-in for a game's post-processing pass):
// out = in * gain + glow, gain a push constant, glow a specialization constant.
layout(local_size_x = 64) in;
layout(constant_id = 0) const float k_glow = 0.0;
layout(push_constant) uniform Push {
  uint n;
  float gain;
} p;
layout(std430, binding = 0) readonly buffer In { float src[]; };
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < p.n) dst[i] = src[i] * p.gain + k_glow;
}
