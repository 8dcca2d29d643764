#pragma once
// Which top-k configuration runs when the caller leaves TopKConfig::path automatic, and why: the
// device's tuning for the problem's shape class (engine/tuning.h) where it fits, else the
// default (chunks of 64 x 32 entries, pruned).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/device_info.h"
#include "engine/ops/config_source.h"
#include "engine/ops/topk.h"
#include "engine/tensor.h"

namespace vkf {
struct Tuning;
}

namespace vkf::ops {

struct TopKProblem {
  DType dtype = DType::f32;
  uint32_t rows = 0, n = 0, k = 0;
};

// "rows wg64", "chunks wg64x32 pruned".
std::string describe(const TopKConfig& c);
// The tuning file's key: "f32/r128/v64k/k8": rows (8, 64, 512, big: how much parallelism a
// subgroup per row has), the row length (1k, 4k, 16k, 64k, big) and k (4, 8, 16, 32, big)
// rounded up to buckets.
std::string topk_shape_class(const TopKProblem& p);
// Why `info` cannot run `c` (path chunks or subgroup_rows) for `p`, or "".
std::string topk_config_misfit(const DeviceInfo& info, const TopKConfig& c, const TopKProblem& p);

struct TopKChoice {
  TopKConfig config;  // path chunks or subgroup_rows
  ConfigSource source = ConfigSource::table;
  std::string why;
};
// A path other than automatic is the caller's (forced).
TopKChoice choose_topk(const DeviceInfo& info, const Tuning* tuning, const TopKProblem& p,
                       const TopKConfig& requested = {});

// The top-k family (the beam search's selection) as the tuning file and the tuner know it
// (engine/ops/tuned_families.h).
struct TopKFamily {
  using Problem = TopKProblem;
  using Work = TopKProblem;
  using Config = TopKConfig;
  static constexpr const char* name = "topk";
  static constexpr const char* title = "top-k";
  static std::string shape_class(const Problem& p) { return topk_shape_class(p); }
  static std::string describe(const Config& c) { return ops::describe(c); }
  static std::string dims(const Problem& p);  // "f32 128x8000 k8"
  static nlohmann::json problem_json(const Problem& p);
  static Problem problem_of(const nlohmann::json& j);
  static nlohmann::json config_json(const Config& c);
  static Config config_of(const nlohmann::json& j);
  static std::string misfit(const DeviceInfo& info, const Config& c, const Problem& p) {
    return topk_config_misfit(info, c, p);
  }
};

}  // namespace vkf::ops
