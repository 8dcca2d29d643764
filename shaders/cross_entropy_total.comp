#version 450
// Deterministic totals of cross_entropy's per-row outputs in one workgroup (fixed summation
// order): out = {sum of row losses (f32), sum of log p(target) (f32), non-pad rows (u32), 0}.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two

layout(std430, binding = 0) readonly buffer RowLoss { float row_loss[]; };  // [rows]
layout(std430, binding = 1) readonly buffer RowLogp { float row_logp[]; };  // [rows]
layout(std430, binding = 2) readonly buffer Targets { int target[]; };      // [rows]
layout(std430, binding = 3) writeonly buffer Out { uint result[]; };        // [4]
layout(push_constant) uniform Push {
  uint rows;
  uint V;
  int pad_id;
} p;

shared float red_loss[WG];
shared float red_logp[WG];
shared uint red_count[WG];

void main() {
  uint t = gl_LocalInvocationID.x;
  float loss = 0.0, logp = 0.0;
  uint count = 0;
  for (uint r = t; r < p.rows; r += WG) {
    loss += row_loss[r];
    logp += row_logp[r];
    int tgt = target[r];
    if (tgt != p.pad_id && tgt >= 0 && uint(tgt) < p.V) ++count;
  }
  red_loss[t] = loss;
  red_logp[t] = logp;
  red_count[t] = count;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) {
      red_loss[t] += red_loss[t + s];
      red_logp[t] += red_logp[t + s];
      red_count[t] += red_count[t + s];
    }
    barrier();
  }
  if (t == 0) {
    result[0] = floatBitsToUint(red_loss[0]);
    result[1] = floatBitsToUint(red_logp[0]);
    result[2] = red_count[0];
    result[3] = 0u;
  }
}
