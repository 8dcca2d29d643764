// f16_rounded(v): v rounded to the nearest binary16 value (ties to even; infinity from 65520 up),
// as the fp32 value that holds it exactly, i.e. what a store of float16_t(v) keeps. Computed on
// the bits with integer arithmetic, so that a compiler cannot fold it away.
//
// Why: a kernel that needs the value it has just stored to a float16_t buffer must not read it
// back. Mesa 25.0.7's lavapipe (Debian 12 backports; not 22.3.6) hands such a read-back the
// unrounded fp32 value: the store's value is forwarded to the load and the f32 -> f16 -> f32
// round trip is dropped (packHalf2x16/unpackHalf2x16 fare no better). Vulkan requires OpFConvert
// to round, so that is the driver's bug; this is our way around it, correct on every driver.
// Seen in layer_norm_forward.comp; test: "layer_norm f16 statistics use h as stored".
#ifndef VKF_F16_ROUND_GLSL
#define VKF_F16_ROUND_GLSL

float f16_rounded(float v) {
  const uint u = floatBitsToUint(v);
  const uint sign = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return v;                                    // infinity, NaN
  if (a >= 0x477FF000u) return uintBitsToFloat(sign | 0x7F800000u);  // >= 65520: infinity
  if (a >= 0x38800000u) {
    // At least 2^-14, a normal binary16: drop 13 of the 23 mantissa bits to nearest even (a
    // carry out of the mantissa moves into the exponent, which is right).
    return uintBitsToFloat(sign | ((a + 0x0FFFu + ((a >> 13) & 1u)) & ~0x1FFFu));
  }
  if (a <= 0x33000000u) return uintBitsToFloat(sign);  // up to 2^-25 (a tie): zero
  // A subnormal binary16: a multiple of 2^-24. v = m 2^(e - 23) with e in [-25, -15], so
  // v / 2^-24 = m >> s with s = -1 - e in [14, 24], rounded to nearest even.
  const uint m = (a & 0x007FFFFFu) | 0x00800000u;
  const uint s = 126u - (a >> 23);
  const uint rest = m & ((1u << s) - 1u), tie = 1u << (s - 1u);
  uint q = m >> s;
  if (rest > tie || (rest == tie && (q & 1u) != 0u)) ++q;
  return uintBitsToFloat(sign | floatBitsToUint(float(q) * 5.9604644775390625e-8));
}

#endif
