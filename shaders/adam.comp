#version 450
// Adam / AdamW over a flat fp32 parameter buffer (Kingma & Ba; decoupled weight decay as in
// Loshchilov & Hutter), with the learning rate computed here from StepScalars.step so a recorded
// step replays unchanged:
//   schedule (Vaswani et al. 5.3): lr = lr_factor * lr_scale * d_model^-0.5
//                                       * min(step^-0.5, step * warmup^-1.5)
//   constant:                      lr = lr_factor * lr_scale
//   g = grad * grad_scale * clip,  clip = min(1, max_norm / (grad_scale * ||grad||)) when clipping
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   w = w * (1 - lr * wd) - lr * (m / (1 - b1^step)) / (sqrt(v / (1 - b2^step)) + eps)
// ||grad|| and the non-finite flag come from grad_norm_final; with skip_nonfinite a step whose
// gradient holds NaN/Inf leaves w, m and v untouched (dynamic loss scaling then retries).
// vkf-variant: adam_texel VKF_TEXEL=1
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef VKF_TEXEL
#extension GL_EXT_samplerless_texture_functions : require
#endif
#include "index.glsl"
#include "step.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEMS = 1u;  // elements an invocation updates

#ifdef VKF_TEXEL
// Every input is read through a texel view, and w, m and v are written through storage bindings
// over the same memory. Each element is read, then written, by one invocation only, so no read
// can see another invocation's write. (Mesa 22.3's and 25's lavapipe run Adam 1.2-1.4x faster
// this way, Mesa 26's 0.8x: docs/performance.md. The tuner chooses.)
layout(std430, binding = 0) writeonly buffer W { float w[]; };  // [n]
layout(binding = 1) uniform textureBuffer grad_texels;          // [n] R32F
layout(std430, binding = 2) writeonly buffer M { float m[]; };  // [n]
layout(std430, binding = 3) writeonly buffer V { float v[]; };  // [n]
layout(binding = 6) uniform textureBuffer w_texels;             // binding 0's memory
layout(binding = 7) uniform textureBuffer m_texels;             // binding 2's
layout(binding = 8) uniform textureBuffer v_texels;             // binding 3's
#define LOAD(name, i) texelFetch(name##_texels, int(i)).x
#else
layout(std430, binding = 0) buffer W { float w[]; };                // [n]
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };  // [n]
layout(std430, binding = 2) buffer M { float m[]; };                // [n]
layout(std430, binding = 3) buffer V { float v[]; };                // [n]
#define LOAD(name, i) name[i]
#endif
layout(std430, binding = 4) readonly buffer Step { StepScalars step_scalars; };
layout(std430, binding = 5) readonly buffer Norm { uint norm_out[]; };  // grad_norm_final's [4]
layout(push_constant) uniform Push {
  uint n;
  uint flags;  // 1: schedule (else constant), 2: clip, 4: skip non-finite
  float lr_factor;
  float d_model;
  float warmup;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
  float max_norm;
} p;

void main() {
  // Each invocation updates ELEMS elements, `threads` apart (neighbouring invocations touch
  // neighbouring elements at every j), so the per-step scalars below are computed once per
  // ELEMS elements: a CPU device runs them for every invocation.
  const uint threads = (p.n + ELEMS - 1u) / ELEMS;
  const uint t = global_index_1d();
  if (t >= threads) return;
  if ((p.flags & 4u) != 0u && norm_out[2] != 0u) return;
  float step = float(max(step_scalars.step, 1u));
  float lr = p.lr_factor * step_scalars.lr_scale;
  if ((p.flags & 1u) != 0u)
    lr *= inversesqrt(p.d_model) * min(inversesqrt(step), step * pow(p.warmup, -1.5));
  float scale = step_scalars.grad_scale;
  if ((p.flags & 2u) != 0u) {
    float norm = scale * uintBitsToFloat(norm_out[1]);
    if (norm > p.max_norm) scale *= p.max_norm / norm;
  }
  const float bias1 = 1.0 - pow(p.beta1, step), bias2 = 1.0 - pow(p.beta2, step);
  const float decay = 1.0 - lr * p.weight_decay;
  [[unroll]] for (uint j = 0u; j < ELEMS; ++j) {
    const uint i = t + j * threads;
    if (i >= p.n) break;
    float g = LOAD(grad, i) * scale;
    float mi = p.beta1 * LOAD(m, i) + (1.0 - p.beta1) * g;
    float vi = p.beta2 * LOAD(v, i) + (1.0 - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float m_hat = mi / bias1;
    float v_hat = vi / bias2;
    w[i] = LOAD(w, i) * decay - lr * m_hat / (sqrt(v_hat) + p.eps);
  }
}
