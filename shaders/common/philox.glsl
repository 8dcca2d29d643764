// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so a dropout mask is a pure function of (seed, step, tensor,
// element): forward and backward regenerate the same mask, and a resumed run the same masks.
// The C++ twin for tests and CPU references is engine/philox.h; keep them identical.
#ifndef VKF_PHILOX_GLSL
#define VKF_PHILOX_GLSL

uvec4 philox4x32_10(uvec4 ctr, uvec2 key) {
  for (int r = 0; r < 10; ++r) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, ctr.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, ctr.z, hi1, lo1);
    ctr = uvec4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return ctr;
}

// Uniform in [0, 1) for element `element` of tensor `tensor` at optimizer step `step`.
float philox_uniform(uint seed, uint step, uint tensor, uint element) {
  uvec4 r = philox4x32_10(uvec4(element >> 2, tensor, step, 0u), uvec2(seed, 0x5EEDu));
  uint lane = element & 3u;
  uint bits = lane == 0u ? r.x : lane == 1u ? r.y : lane == 2u ? r.z : r.w;
  return float(bits >> 8) * (1.0 / 16777216.0);
}

// Inverted dropout: 0 with probability p, else 1/(1-p).
float dropout_scale(float p, uint seed, uint step, uint tensor, uint element) {
  if (p <= 0.0) return 1.0;
  return philox_uniform(seed, step, tensor, element) < p ? 0.0 : 1.0 / (1.0 - p);
}

#endif
