#version 450
// Pruning pre-pass of topk: with topk's chunking (chunk of C = WG * E entries, invocation t owns
// slots t + j * WG), writes each invocation's maximum, M[row, chunk * WG + t], or -inf when it
// owns no entry. The maxima come from disjoint entries, so the k-th largest of M is a lower
// bound of the row's k-th largest value: topk's first pass stops a chunk below it.
// topk_thread_max_f16 reads fp16 values (16-bit storage only), as topk_f16; the maxima are fp32.
// vkf-variant: topk_thread_max_f16 VKF_F16=1
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;  // as topk
layout(constant_id = 1) const uint E = 32;

layout(std430, binding = 0) readonly buffer InVal { STORE_T in_val[]; };  // [rows, n]
layout(std430, binding = 1) writeonly buffer M { float m_out[]; };      // [rows, chunks * WG]
layout(push_constant) uniform Push {
  uint rows;
  uint n;
  uint chunks;
} p;

void main() {
  uint chunk = gl_WorkGroupID.x;
  uint row = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (row >= p.rows) return;
  uint t = gl_LocalInvocationID.x;
  uint begin = chunk * WG * E;
  float m = uintBitsToFloat(0xff800000u);  // -inf: no entry
  for (uint j = 0; j < E; ++j) {
    uint pos = begin + t + j * WG;
    if (pos < p.n) m = max(m, float(in_val[row * p.n + pos]));
  }
  m_out[(row * p.chunks + chunk) * WG + t] = m;
}
