// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so a dropout mask is a pure function of (seed, step, tensor,
// element): forward and backward regenerate the same mask, and a resumed run the same masks.
// The C++ twin for tests and CPU references is engine/philox.h; keep them identical.
//
// Element i of a tensor's stream uses word i & 3 of counter block i >> 2, so a kernel that owns
// runs of four consecutive elements calls the generator once per run: dropout_block_scales().
// Every dropout factor goes through dropout_word_scale(), so all kernels draw the same mask.
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

// The four words of counter block `block` of tensor `tensor` at optimizer step `step`: those of
// elements 4 * block .. 4 * block + 3, in order.
uvec4 philox_block(uint seed, uint step, uint tensor, uint block) {
  return philox4x32_10(uvec4(block, tensor, step, 0u), uvec2(seed, 0x5EEDu));
}

// Uniform in [0, 1) from the top 24 bits of a word (exact in fp32).
float philox_word_uniform(uint bits) {
  return float(bits >> 8) * (1.0 / 16777216.0);
}

// Inverted dropout factor of the element that drew `bits`: 0 with probability p, else 1/(1-p).
float dropout_word_scale(uint bits, float p) {
  return philox_word_uniform(bits) < p ? 0.0 : 1.0 / (1.0 - p);
}

// Uniform in [0, 1) for element `element` of tensor `tensor` at optimizer step `step`.
float philox_uniform(uint seed, uint step, uint tensor, uint element) {
  return philox_word_uniform(philox_block(seed, step, tensor, element >> 2)[element & 3u]);
}

// Inverted dropout: 0 with probability p, else 1/(1-p).
float dropout_scale(float p, uint seed, uint step, uint tensor, uint element) {
  if (p <= 0.0) return 1.0;
  return dropout_word_scale(philox_block(seed, step, tensor, element >> 2)[element & 3u], p);
}

// dropout_scale() of elements 4 * block .. 4 * block + 3 from one generator call. The arguments
// are evaluated even when p <= 0: a kernel whose step buffer is bound only while dropout is on
// must test p before calling.
vec4 dropout_block_scales(float p, uint seed, uint step, uint tensor, uint block) {
  if (p <= 0.0) return vec4(1.0);
  uvec4 r = philox_block(seed, step, tensor, block);
  return vec4(dropout_word_scale(r.x, p), dropout_word_scale(r.y, p), dropout_word_scale(r.z, p),
              dropout_word_scale(r.w, p));
}

// dropout_scale() of the four consecutive elements e0 .. e0 + 3, from one generator call when e0
// starts a block and two otherwise (a run that starts mid-block, e.g. a share of a batch whose
// first element is not a multiple of four). Test p before calling, as for dropout_block_scales().
vec4 dropout_run_scales(float p, uint seed, uint step, uint tensor, uint e0) {
  if (p <= 0.0) return vec4(1.0);
  uint off = e0 & 3u;
  if (off == 0u) return dropout_block_scales(p, seed, step, tensor, e0 >> 2);
  uvec4 lo = philox_block(seed, step, tensor, e0 >> 2);
  uvec4 hi = philox_block(seed, step, tensor, (e0 >> 2) + 1u);
  uvec4 w = off == 1u ? uvec4(lo.yzw, hi.x) : off == 2u ? uvec4(lo.zw, hi.xy) : uvec4(lo.w, hi.xyz);
  return vec4(dropout_word_scale(w.x, p), dropout_word_scale(w.y, p), dropout_word_scale(w.z, p),
              dropout_word_scale(w.w, p));
}

#endif
