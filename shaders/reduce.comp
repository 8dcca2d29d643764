#version 450
// Row reduction, one workgroup per row: y[r] = scale * sum of x[r * cols + c] for c < cols and
// r * cols + c < total (the last row may be short, which makes a two-pass full reduction of n
// elements: [ceil(n / chunk), chunk] -> partials -> [1, partials]). Fixed split and tree order:
// deterministic. scale = 1 gives the sum, 1 / count the mean.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two

layout(std430, binding = 0) readonly buffer X { float x[]; };   // [total]
layout(std430, binding = 1) writeonly buffer Y { float y[]; };  // [rows]
layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint total;
  float scale;
} p;

shared float red[WG];

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x;
  uint base = row * p.cols;
  uint end = min(p.total - base, p.cols);
  float s = 0.0;
  for (uint c = t; c < end; c += WG) s += x[base + c];
  red[t] = s;
  barrier();
  for (uint k = WG / 2; k > 0; k >>= 1) {
    if (t < k) red[t] += red[t + k];
    barrier();
  }
  if (t == 0) y[row] = red[0] * p.scale;
}
