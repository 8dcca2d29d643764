#pragma once
// Which cross-entropy kernel configuration (workgroup size, subgroup or shared-memory
// reductions) runs when the caller leaves CrossEntropyArgs::config at its default, and why: the
// device's tuning for the problem's shape class (engine/tuning.h) where it fits, else the
// default (256 invocations, subgroup reductions where the device has subgroup arithmetic).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/device_info.h"
#include "engine/ops/config_source.h"
#include "engine/ops/elementwise.h"
#include "engine/tensor.h"

namespace vkf {
struct Tuning;
}

namespace vkf::ops {

struct CrossEntropyProblem {
  DType dtype = DType::f32;
  uint32_t rows = 0, vocab = 0;
};

// "wg256 subgroup texel", "wg128 shared" (reads left automatic).
std::string describe(const RowKernelConfig& c);
bool same_kernel(const RowKernelConfig& a, const RowKernelConfig& b);
// The tuning file's key: "f32/v8k", the vocabulary rounded up to a bucket (1k, 4k, 16k, 64k,
// big). The rows do not enter it: a workgroup reduces one row.
std::string cross_entropy_shape_class(const CrossEntropyProblem& p);

// The default, every field resolved (subgroup on or off; storage-buffer reads).
RowKernelConfig row_kernel_default_config(const DeviceInfo& info);
// Why `info` cannot run the complete configuration `c` (subgroup on or off), or "". Whether a
// texel view fits the logits depends on their buffer: cross_entropy() checks it when it runs.
std::string row_kernel_config_misfit(const DeviceInfo& info, const RowKernelConfig& c);

struct CrossEntropyChoice {
  RowKernelConfig config;  // every field resolved (a tuned entry from before reads were tuned:
                           // the default's reads)
  ConfigSource source = ConfigSource::table;
  std::string why;
};
CrossEntropyChoice choose_cross_entropy(const DeviceInfo& info, const Tuning* tuning,
                                        const CrossEntropyProblem& p);

// The cross-entropy family (the loss with its gradient) as the tuning file and the tuner know it
// (engine/ops/tuned_families.h).
struct CrossEntropyFamily {
  using Problem = CrossEntropyProblem;
  using Work = CrossEntropyProblem;
  using Config = RowKernelConfig;
  static constexpr const char* name = "cross_entropy";
  static constexpr const char* title = "cross-entropy";
  static std::string shape_class(const Problem& p) { return cross_entropy_shape_class(p); }
  static std::string describe(const Config& c) { return ops::describe(c); }
  static std::string dims(const Problem& p);  // "f32 4096x8000"
  static nlohmann::json problem_json(const Problem& p);
  static Problem problem_of(const nlohmann::json& j);
  static nlohmann::json config_json(const Config& c);
  static Config config_of(const nlohmann::json& j);
  static std::string misfit(const DeviceInfo& info, const Config& c, const Problem&) {
    return row_kernel_config_misfit(info, c);
  }
};

}  // namespace vkf::ops
