#version 450
// dh[i] = h[i] > 0 ? dh[i] : 0, in place: the ReLU between fc1 and fc2 of the FFN, where h is
// the saved post-ReLU activation (h > 0 exactly where the pre-activation was > 0).
// relu_backward_f16: h and dh stored as fp16 (mixed-precision training).
// vkf-variant: relu_backward_f16 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer H { STORE_T h[]; };
layout(std430, binding = 1) buffer DH { STORE_T dh[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = global_index_1d();
  if (i < p.n && !(float(h[i]) > 0.0)) dh[i] = STORE_T(0.0);
}
