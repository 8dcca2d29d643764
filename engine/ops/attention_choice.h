#pragma once
// Which attention configuration (path, tiles, rows per lane, unroll) a kernel runs when its
// caller leaves AttentionTiles at the defaults, and why: the device's tuning for the problem's
// shape class (engine/tuning.h) where it fits, else attention_default_tiles. A caller's forced
// fields win over both, field by field (engine/ops/attention.cpp), and the device-wide
// OpOverrides::attention_rows over the path of both.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
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

// An attention problem with the batch and heads it runs at (the shape class leaves them out).
struct AttentionWork {
  AttentionProblem problem;
  uint32_t batch = 1, heads = 1;
};
inline const AttentionProblem& problem_of(const AttentionWork& w) {
  return w.problem;
}
inline AttentionProblem& problem_of(AttentionWork& w) {
  return w.problem;
}

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

// The attention family as the tuning file and the tuner know it, a class for each kernel
// (engine/ops/tuned_families.h).
struct AttentionFamily {
  using Problem = AttentionProblem;
  using Work = AttentionWork;
  using Config = AttentionTiles;
  static constexpr const char* name = "attention";
  static constexpr const char* title = "attention";
  static std::string shape_class(const Problem& p) { return attention_shape_class(p); }
  static std::string describe(const Config& c) { return ops::describe(c); }
  static std::string dims(const Problem& p);  // "f32 fwd 64x64 32x32 causal"
  static nlohmann::json problem_json(const Problem& p);
  static Problem problem_of(const nlohmann::json& j);
  static nlohmann::json config_json(const Config& c);
  static Config config_of(const nlohmann::json& j);
  static std::string misfit(const DeviceInfo& info, const Config& c, const Problem& p);
};

}  // namespace vkf::ops
