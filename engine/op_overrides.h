#pragma once
// Device-wide overrides of the ops' automatic kernel choices, to compare paths inside a whole
// model (benchmarks). The engine reads no environment variable: the vkf command, the tests and
// the benchmarks map VKF_MATMUL_TEXEL, VKF_MATMUL_SPLIT_K and VKF_ATTENTION_PATH onto these
// (apps/tool_env/). A choice forced in an op's own arguments (MatmulArgs::texel_views,
// AttentionTiles::path) still wins over these.
#include <cstdint>
#include <optional>

namespace vkf {

struct OpOverrides {
  // Matmul operands through uniform texel buffers (true) or storage buffers (false);
  // nullopt: texel views on CPU devices where they fit (see MatmulArgs::texel_views).
  std::optional<bool> matmul_texel_views;
  // Split-k where a matmul is given a workspace (MatmulArgs::workspace): false never; nullopt or
  // true as matmul_split_k chooses. MatmulArgs::split_k still wins.
  std::optional<bool> matmul_split_k;
  // Attention kernels: the rows path (true) or the tiled path (false); nullopt: rows on CPU
  // devices, tiled elsewhere (see AttentionPath).
  std::optional<bool> attention_rows;
};

}  // namespace vkf
