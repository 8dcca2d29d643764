// Workgroup-wide max and sum of one float per invocation, returned to every invocation and
// folded in a fixed order (deterministic for a given configuration): the row reductions of the
// softmax kernels (cross_entropy, log_softmax). Include after declaring the workgroup size as the
// specialization constant WG (a power of two); declares the shared scratch `red`. With
// VKF_SUBGROUP (and GL_KHR_shader_subgroup_arithmetic), each subgroup reduces first and every
// invocation folds the per-subgroup partials; without it, a shared-memory tree.
shared float red[WG];

#ifdef VKF_SUBGROUP
// Subgroup reduction, then every invocation folds the per-subgroup partials in the same order.
float wg_max(float v) {
  v = subgroupMax(v);
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  float r = red[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) r = max(r, red[i]);
  barrier();
  return r;
}
float wg_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  float r = red[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) r += red[i];
  barrier();
  return r;
}
#else
float wg_max(float v) {
  uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = max(red[t], red[t + s]);
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}
float wg_sum(float v) {
  uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}
#endif
