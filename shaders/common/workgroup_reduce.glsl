// Workgroup-wide max and sum of one value per invocation, returned to every invocation and
// folded in a fixed order (deterministic for a given configuration): the row reductions of the
// softmax kernels (cross_entropy, log_softmax) and of LayerNorm. Include after declaring the
// workgroup size as the specialization constant WG (a power of two); declares the shared scratch
// `red`. With VKF_SUBGROUP (and GL_KHR_shader_subgroup_arithmetic), each subgroup reduces first
// and every invocation folds the per-subgroup partials; without it, a shared-memory tree.
// With WG_REDUCE_VEC2 the values are vec2 (two sums at once, e.g. LayerNorm's backward) and
// there is no wg_max.
#ifdef WG_REDUCE_VEC2
#define WG_REDUCE_T vec2
#else
#define WG_REDUCE_T float
#endif
shared WG_REDUCE_T red[WG];

#ifdef VKF_SUBGROUP
// Subgroup reduction, then every invocation folds the per-subgroup partials in the same order.
#ifndef WG_REDUCE_VEC2
float wg_max(float v) {
  v = subgroupMax(v);
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  float r = red[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) r = max(r, red[i]);
  barrier();
  return r;
}
#endif
WG_REDUCE_T wg_sum(WG_REDUCE_T v) {
  v = subgroupAdd(v);
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  WG_REDUCE_T r = red[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) r += red[i];
  barrier();
  return r;
}
#else
#ifndef WG_REDUCE_VEC2
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
#endif
WG_REDUCE_T wg_sum(WG_REDUCE_T v) {
  uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  WG_REDUCE_T r = red[0];
  barrier();
  return r;
}
#endif
