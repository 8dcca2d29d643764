#version 450
// A host kernel on VK_NV_cooperative_matrix2, compiled as SPIR-V 1.6 (tests/CMakeLists.txt,
// where glslc knows the extension): the path the engine's coopmat2 matmul takes (a Vulkan 1.3
// device, the extension's features enabled, LocalSizeId), checked on a driver that has what this
// kernel needs, Mesa 26.1's lavapipe among them, which lacks what the matmul itself needs. Each
// workgroup (one subgroup) loads a ROWS x COLS fp32 tile of X, whose sizes need flexible
// dimensions; a per-element operation writes alpha * x + row / 4 + col / 16 + tile into it (the
// coordinates the matmul's epilogue relies on); the tile is converted to fp16 and stored to Y
// with X's row stride.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 16;
layout(constant_id = 2) const uint COLS = 24;

layout(push_constant) uniform Push {
  uint ld;
  float alpha;
} p;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float16_t y[]; };

#define TILE coopmat<float, gl_ScopeSubgroup, ROWS, COLS, gl_MatrixUseAccumulator>
#define TILE16 coopmat<float16_t, gl_ScopeSubgroup, ROWS, COLS, gl_MatrixUseAccumulator>

float mark(const in uint row, const in uint col, const in float v, const in float alpha,
           const in uint tile) {
  return alpha * v + float(row) * 0.25 + float(col) * 0.0625 + float(tile);
}

void main() {
  const uint tile = gl_WorkGroupID.x;
  const uint at = tile * ROWS * p.ld;
  TILE t;
  coopMatLoad(t, x, at, p.ld, gl_CooperativeMatrixLayoutRowMajor);
  coopMatPerElementNV(t, t, mark, p.alpha, tile);
  TILE16 h = TILE16(t);
  coopMatStore(h, y, at, p.ld, gl_CooperativeMatrixLayoutRowMajor);
}
