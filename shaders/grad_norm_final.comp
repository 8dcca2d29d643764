#version 450
// Second pass of the global gradient norm, one workgroup: folds the partials of grad_norm in a
// fixed order into out = {sum of squares (f32), norm (f32), non-finite flag (u32), 0}. The flag
// is also set when the sum of squares overflows, since the norm is then unusable too.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two

layout(std430, binding = 0) readonly buffer Partials { uint partial[]; };  // [2 * count]
layout(std430, binding = 1) writeonly buffer Out { uint result[]; };       // [4]
layout(push_constant) uniform Push { uint count; } p;

shared float red_sq[WG];
shared uint red_bad[WG];

void main() {
  uint t = gl_LocalInvocationID.x;
  float sq = 0.0;
  uint bad = 0u;
  for (uint i = t; i < p.count; i += WG) {
    sq += uintBitsToFloat(partial[2u * i]);
    bad |= partial[2u * i + 1u];
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
    float total = red_sq[0];
    bool overflow = (floatBitsToUint(total) & 0x7f800000u) == 0x7f800000u;
    result[0] = floatBitsToUint(total);
    result[1] = floatBitsToUint(sqrt(total));
    result[2] = (red_bad[0] != 0u || overflow) ? 1u : 0u;
    result[3] = 0u;
  }
}
