#version 450
// The fp32 FMA-rate probe behind the benchmarks' ratio_peak: CHAINS independent multiply-add
// chains a thread (enough to cover the FMA latency on every device), the loop long enough that
// its bookkeeping is noise. out[t] = sum over c of x_c after `iterations` steps of
// x_c = fma(x_c, a, b), with x_c starting at ((t mod 7) + c) / 1024. With |a| < 1 the chains
// converge, so the result is finite and checkable whatever the iteration count.
// The peak_fma_f16 variant runs the chains in float16_t (shaderFloat16): the fp16 FMA rate.
// vkf-variant: peak_fma_f16 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#ifdef VKF_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define T float16_t
#else
#define T float
#endif
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CHAINS = 8;
layout(std430, binding = 0) writeonly buffer Out { float out_[]; };
layout(push_constant) uniform Push {
  uint threads;
  uint iterations;
  float a;
  float b;
} p;
void main() {
  const uint t = global_index_1d();
  if (t >= p.threads) return;
  const T a = T(p.a), b = T(p.b);
  T x[CHAINS];
  for (uint c = 0; c < CHAINS; ++c) x[c] = T(float(t % 7u + c) / 1024.0);
  // Eight steps a loop trip: on CPU devices a trip's bookkeeping (the lanes' loop mask) costs as
  // much as a few dozen FMAs. The wrapper checks that iterations is a multiple of 8.
  for (uint i = 0; i < p.iterations; i += 8)
    for (uint u = 0; u < 8; ++u)
      for (uint c = 0; c < CHAINS; ++c) x[c] = fma(x[c], a, b);
  float s = 0.0;
  for (uint c = 0; c < CHAINS; ++c) s += float(x[c]);
  out_[t] = s;
}
