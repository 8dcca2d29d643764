#version 450
// dgamma/dbeta, stage 1 of 2: per chunk of rows, per column, the partial sums
//   partial[0, part, c] = sum_r dy[r, c] * xhat[r, c],   partial[1, part, c] = sum_r dy[r, c]
// summed in row order. Stage 2 (layer_norm_dparams_reduce.comp) adds the parts in order, so the
// result is deterministic without float atomics. Adjacent invocations read adjacent columns.
// The _f16 variant reads fp16 dy and h (16-bit storage only); the partials stay fp32.
// vkf-variant: layer_norm_dparams_partial_f16 VKF_F16=1
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer DY { STORE_T dy[]; };   // [rows, d]
layout(std430, binding = 1) readonly buffer H { STORE_T h[]; };     // [rows, d]
layout(std430, binding = 2) readonly buffer M { float mean_in[]; }; // [rows]
layout(std430, binding = 3) readonly buffer R { float rstd_in[]; }; // [rows]
layout(std430, binding = 4) writeonly buffer P { float partial[]; };  // [2, parts, d]
layout(push_constant) uniform Push {
  uint rows;
  uint d;
  uint parts;
  uint rows_per_part;
} pc;

void main() {
  uint c = gl_GlobalInvocationID.x;
  uint part = gl_WorkGroupID.y;
  if (c >= pc.d) return;
  uint r0 = part * pc.rows_per_part;
  uint r1 = min(pc.rows, r0 + pc.rows_per_part);
  float dg = 0.0, db = 0.0;
  for (uint r = r0; r < r1; ++r) {
    float g = float(dy[r * pc.d + c]);
    dg += g * (float(h[r * pc.d + c]) - mean_in[r]) * rstd_in[r];
    db += g;
  }
  partial[part * pc.d + c] = dg;
  partial[(pc.parts + part) * pc.d + c] = db;
}
