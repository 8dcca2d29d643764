#version 450
// 24 KiB of shared memory and 256 invocations: within lavapipe's limits (32 KiB, 1024), over
// a 16 KiB, 128-invocation profile's. Five storage buffers: over a profile's four.
layout(local_size_x = 256) in;
shared float s[6144];
layout(std430, binding = 0) buffer B0 { float b0[]; };
layout(std430, binding = 1) buffer B1 { float b1[]; };
layout(std430, binding = 2) buffer B2 { float b2[]; };
layout(std430, binding = 3) buffer B3 { float b3[]; };
layout(std430, binding = 4) buffer B4 { float b4[]; };
void main() {
  const uint i = gl_LocalInvocationID.x;
  for (uint k = i; k < 6144; k += 256) s[k] = b0[k] + b1[k] + b2[k] + b3[k];
  barrier();
  b4[i] = s[6143 - i];
}
