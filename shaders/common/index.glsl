// Shared indexing helpers. Workgroup counts are capped at 65535 per dimension on many devices,
// so 1-D kernels fold their global index over x and y.
#ifndef VKF_INDEX_GLSL
#define VKF_INDEX_GLSL

uint global_index_1d() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}

#endif
