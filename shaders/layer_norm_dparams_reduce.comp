#version 450
// dgamma/dbeta, stage 2 of 2: adds the per-chunk partial sums of stage 1 in chunk order.
#extension GL_GOOGLE_include_directive : require
#include "index.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer P { float partial[]; };  // [2, parts, d]
layout(std430, binding = 1) buffer DG { float dgamma[]; };           // [d]
layout(std430, binding = 2) buffer DB { float dbeta[]; };            // [d]
layout(push_constant) uniform Push {
  uint d;
  uint parts;
  uint accumulate;  // 1: add to the gradients already there
} pc;

void main() {
  uint c = global_index_1d();
  if (c >= pc.d) return;
  float dg = 0.0, db = 0.0;
  for (uint k = 0; k < pc.parts; ++k) {
    dg += partial[k * pc.d + c];
    db += partial[(pc.parts + k) * pc.d + c];
  }
  if (pc.accumulate != 0u) {
    dg += dgamma[c];
    db += dbeta[c];
  }
  dgamma[c] = dg;
  dbeta[c] = db;
}
