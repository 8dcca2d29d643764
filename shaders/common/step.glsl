// Layout of the per-step scalar buffer (engine/step_scalars.h); bind it as a readonly buffer.
#ifndef VKF_STEP_GLSL
#define VKF_STEP_GLSL
struct StepScalars {
  uint step;
  uint seed;
  float grad_scale;
  float lr_scale;
  uint dropout_row;  // the batch row this batch starts at (dropout masks of data-parallel shares)
  uint pad0, pad1, pad2;
};
#endif
