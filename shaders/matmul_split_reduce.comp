#version 450
// Split-k matmul, stage 2 of 2 (engine/ops/matmul.cpp): C = alpha * sum_s P[s] + beta * C, then
// the matmul's epilogue (1 = + bias[n], 2 = relu(. + bias[n]), 3 = + R[m, n] with C's layout).
// Stage 1 ran the chosen matmul kernel once per slice of k (the slices as its batch items),
// each storing its fp32 partial product P[s], [m, n] packed, partial_stride apart, unscaled.
// The slices are added in order, so a result does not depend on how the device schedules them.
// vkf-variant: matmul_split_reduce_f16 VKF_FP16=1
#extension GL_GOOGLE_include_directive : require
#ifdef VKF_FP16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
#include "index.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EPILOGUE = 0;
layout(constant_id = 2) const uint READ_C = 0;  // beta != 0

layout(std430, binding = 0) restrict readonly buffer P { float partial[]; };  // [slices][m, n]
layout(std430, binding = 1) buffer C { STORE_T c[]; };
// bias [N] for epilogues 1 and 2, R for epilogue 3, unused (any buffer) otherwise.
layout(std430, binding = 2) restrict readonly buffer X { STORE_T x[]; };

layout(push_constant) uniform Push {
  uint m, n, ldc, slices;
  float alpha, beta;
  uint partial_stride;  // elements from one slice's partial product to the next's
} p;

void main() {
  const uint i = global_index_1d();
  if (i >= p.m * p.n) return;
  const uint row = i / p.n, col = i % p.n;
  float sum = 0.0;
  for (uint s = 0; s < p.slices; ++s) sum += partial[s * p.partial_stride + i];
  const uint at = row * p.ldc + col;
  float v = p.alpha * sum;
  // READ_C is set only for beta != 0: with beta == 0, C may hold garbage (NaN * 0 is NaN).
  if (READ_C != 0) v += p.beta * float(c[at]);
  if (EPILOGUE == 1 || EPILOGUE == 2) v += float(x[col]);
  if (EPILOGUE == 2) v = max(v, 0.0);
  if (EPILOGUE == 3) v += float(x[at]);
  c[at] = STORE_T(v);
}
