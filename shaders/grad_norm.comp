#version 450
// First pass of the global gradient norm: workgroup w of G writes the sum of squares of its
// grid-strided elements and a flag for any non-finite element. The fixed (G, WG) split and tree
// order make the result deterministic. The flag tests the exponent bits, because drivers may
// fold isnan/isinf away.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two

layout(std430, binding = 0) readonly buffer G { float g[]; };             // [n]
layout(std430, binding = 1) writeonly buffer Partials { uint partial[]; };  // [2 * total groups]
layout(push_constant) uniform Push {
  uint n;
  uint first_partial;  // this buffer's partials start at pair index first_partial
} p;

shared float red_sq[WG];
shared uint red_bad[WG];

void main() {
  uint t = gl_LocalInvocationID.x;
  uint groups = gl_NumWorkGroups.x;
  float sq = 0.0;
  uint bad = 0u;
  for (uint i = gl_WorkGroupID.x * WG + t; i < p.n; i += groups * WG) {
    float v = g[i];
    if ((floatBitsToUint(v) & 0x7f800000u) == 0x7f800000u) bad = 1u;
    sq += v * v;
  }
  red_sq[t] = sq;
  red_bad[t] = bad;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) {
      red_sq[t] += red_sq[t + s];
      red_bad[t] |= red_bad[t + s];
    }
    barrier();
  }
  if (t == 0) {
    uint slot = 2u * (p.first_partial + gl_WorkGroupID.x);
    partial[slot] = floatBitsToUint(red_sq[0]);
    partial[slot + 1u] = red_bad[0];
  }
}
