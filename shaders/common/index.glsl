// Shared indexing helpers. Workgroup counts are capped at 65535 per dimension on many devices,
// so 1-D kernels fold their global index over x and y.
#ifndef VKF_INDEX_GLSL
#define VKF_INDEX_GLSL

// A macro, not a function: the shaders include this file before their
// `layout(local_size_x_id = 0) in;`, and a function defined there saw gl_WorkGroupSize as the
// constant (1, 1, 1), not yet the specialization constant. glslang folded the row stride to
// gl_NumWorkGroups.x, so every dispatch of more than 65535 workgroups (16.7M elements at 256 a
// workgroup: Adam over a large parameter chunk, a large cast or copy) recomputed the first row's
// elements and never reached those past 65535 * 256 + (rows - 1) * 65535 (found by vkf bench).
// Expanded in main(), after the layout, it reads the specialized size.
#define global_index_1d() \
  (gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x)

#endif
