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
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
#include "step.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer W { float w[]; };                // [n]
layout(std430, binding = 1) readonly buffer Grad { float grad[]; };  // [n]
layout(std430, binding = 2) buffer M { float m[]; };                // [n]
layout(std430, binding = 3) buffer V { float v[]; };                // [n]
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
  uint i = global_index_1d();
  if (i >= p.n) return;
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
  float g = grad[i] * scale;
  float mi = p.beta1 * m[i] + (1.0 - p.beta1) * g;
  float vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  float m_hat = mi / (1.0 - pow(p.beta1, step));
  float v_hat = vi / (1.0 - pow(p.beta2, step));
  w[i] = w[i] * (1.0 - lr * p.weight_decay) - lr * m_hat / (sqrt(v_hat) + p.eps);
}
