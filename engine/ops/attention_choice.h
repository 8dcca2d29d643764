#pragma once
// Which attention configuration (path, tiles, rows per lane, unroll) a kernel runs when its
// caller leaves AttentionTiles at the defaults, and why: the device's tuning for the problem's
// shape class (engine/tuning.h) where it fits, else attention_default_tiles. A caller's forced
// fields win over both, field by field (engine/ops/attention.cpp), and the device-wide
// OpOverrides::attention_rows over the path of both.
#include <cstdint>
#include <string>

#include "engine/device_info.h"
#include "engine/ops/attention.h"
#include "engine/ops/config_source.h"
#include "engine/tensor.h"

namespace vkf {
struct Tuning;
}

namespace vkf::ops {

struct AttentionProblem {
  DType dtype = DType::f32;
  AttentionKernel kernel = AttentionKernel::forward;
  uint32_t d_k = 0, d_v = 0, len_q = 0, len_k = 0;
  bool causal = false;
};

// "fwd", "bkv", "bq".
const char* attention_kernel_short_name(AttentionKernel k);
// The tuning file's key: "f32/fwd/d64/causal/q64/k64" (the head dims, "d64x32" when they
// differ; lengths rounded up to a bucket: 16, 64, 256, 1k, big), so that a batch of a few more
// or fewer tokens shares its tuning, while decoding's single query rows keep their own.
std::string attention_shape_class(const AttentionProblem& p);

// "rows4 unrolled", "tiled wg128 64x32": the values in a word or two, for the tuner's reports.
std::string describe(const AttentionTiles& t);
// Whether two configurations build the same kernels (the fields their path reads).
bool same_kernel(const AttentionTiles& a, const AttentionTiles& b);

struct AttentionChoice {
  // Path resolved, tiles always set (a tuned rows-path entry gets the default's); rows 0 and
  // unroll automatic for the default (the op resolves them).
  AttentionTiles tiles;
  ConfigSource source = ConfigSource::table;
  std::string why;  // one line
};

// `tuning` may be null (the defaults only). A tuned entry `info` cannot run (another device's
// file imported by hand) is passed over, and `why` says so.
AttentionChoice choose_attention(const DeviceInfo& info, const Tuning* tuning,
                                 const AttentionProblem& p);

}  // namespace vkf::ops
