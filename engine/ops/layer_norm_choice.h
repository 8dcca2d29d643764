#pragma once
// Which LayerNorm kernel configuration (row reduction, workgroup size) runs when the caller
// leaves LayerNorm{Forward,Backward}Args::reduce and workgroup_size at their defaults, and why:
// the device's tuning for the problem's shape class (engine/tuning.h) where it fits, else the
// static rule (a subgroup per row on CPU devices and for short rows, else a workgroup per row).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/device_info.h"
#include "engine/ops/config_source.h"
#include "engine/ops/layer_norm.h"
#include "engine/tensor.h"

namespace vkf {
struct Tuning;
}

namespace vkf::ops {

struct LayerNormConfig {
  uint32_t workgroup_size = 0;  // a power of two
  RowReduce reduce = RowReduce::automatic;
  // The inputs through texel views or storage buffers; automatic (a tuning file from before the
  // reads were tuned) is the default's.
  RowKernelConfig::Reads reads = RowKernelConfig::Reads::automatic;
  bool operator==(const LayerNormConfig&) const = default;
};

struct LayerNormProblem {
  DType dtype = DType::f32;
  bool backward = false;
  uint32_t rows = 0, d = 0;
};

const char* row_reduce_name(RowReduce r);  // "automatic", "shared", "subgroup", "subgroup_rows"
// nullopt-like: returns false when `name` is none of those.
bool parse_row_reduce(const std::string& name, RowReduce& out);
// "subgroup_rows wg64", with " texel" or " storage" where the reads are set.
std::string describe(const LayerNormConfig& c);

// The tuning file's key: "f32/fwd/d512", d rounded up to a power of two from 32 ("big" past
// 4096). The rows do not enter it: each is reduced alone.
std::string layer_norm_shape_class(const LayerNormProblem& p);

// The static rule's configuration for rows of d columns, every field resolved.
LayerNormConfig layer_norm_default_config(const DeviceInfo& info, uint32_t d);
// Why `info` cannot run the complete configuration `c`, or "".
std::string layer_norm_config_misfit(const DeviceInfo& info, const LayerNormConfig& c);

struct LayerNormChoice {
  LayerNormConfig config;  // every field resolved
  ConfigSource source = ConfigSource::table;
  std::string why;
};
LayerNormChoice choose_layer_norm(const DeviceInfo& info, const Tuning* tuning,
                                  const LayerNormProblem& p);

// The LayerNorm family as the tuning file and the tuner know it (engine/ops/tuned_families.h).
struct LayerNormFamily {
  using Problem = LayerNormProblem;
  using Work = LayerNormProblem;
  using Config = LayerNormConfig;
  static constexpr const char* name = "layer_norm";
  static constexpr const char* title = "LayerNorm";
  static std::string shape_class(const Problem& p) { return layer_norm_shape_class(p); }
  static std::string describe(const Config& c) { return ops::describe(c); }
  static std::string dims(const Problem& p);  // "f32 bwd 4096x512"
  static nlohmann::json problem_json(const Problem& p);
  static Problem problem_of(const nlohmann::json& j);
  static nlohmann::json config_json(const Config& c);
  static Config config_of(const nlohmann::json& j);
  static std::string misfit(const DeviceInfo& info, const Config& c, const Problem& p);
  // A configuration as it runs: an entry from before the reads were tuned reads storage.
  static Config as_run(Config c);
};

}  // namespace vkf::ops
