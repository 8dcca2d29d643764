#pragma once
// Which matmul kernel configuration runs a problem, and why: the one place that decides it, so
// that ops::matmul, the tests and `vkf bench` give the same answer. In order: a configuration
// the caller forces (MatmulArgs::config); the device's tuning for the problem's shape class
// (engine/tuning.h), where it fits; the static table's row (matmul_tuning.h).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/device.h"
#include "engine/ops/matmul_tuning.h"
#include "engine/tensor.h"

namespace vkf {
struct Tuning;
}

namespace vkf::ops {

// What the choice depends on: storage type, transposes and the sizes.
struct MatmulProblem {
  DType dtype = DType::f32;
  bool trans_a = false, trans_b = false;
  uint32_t m = 0, n = 0, k = 0;
  // The caller gives a split-k workspace (MatmulArgs::workspace), as training does its weight
  // and bias gradients: the tuner then times the problem as it runs, split where it would be,
  // and times the split itself. Not part of the shape class.
  bool workspace = false;
};

// The tuning file's key for a problem: "f32/abt/m1k/n1k/k1k", the form (ab, abt, atb, atbt) and
// each size rounded up to a bucket (16, 128, 1k, big), so that batches of a few more or fewer
// tokens share their tuning, and a batch of 25,000 tokens the tuning timed at 4096.
std::string matmul_shape_class(const MatmulProblem& p);

enum class MatmulSource { forced, tuned, table };
const char* matmul_source_name(MatmulSource s);  // "forced", "tuned", "table"

struct MatmulChoice {
  MatmulConfig config;  // a copy: a tuned configuration belongs to no table
  MatmulSource source = MatmulSource::table;
  std::string why;  // one line: "table row cpu_direct16: CPU device, subgroups of 16, ..."
};

// Why a tuned configuration cannot run problems like `p` on `info`, or "": the checks of a forced
// one (matmul_config_misfit), and a tensor-core row only for f16 in a build with its kernel.
std::string tuned_matmul_misfit(const MatmulConfig& c, const DeviceInfo& info,
                                const MatmulProblem& p);

// `tuning` may be null (the table only). A tuned entry that does not fit `info` (another
// device's file imported by hand) or cannot run the problem (a coopmat row for f32) is passed
// over, and `why` says so.
MatmulChoice choose_matmul(const DeviceInfo& info, const Tuning* tuning, const MatmulProblem& p);
inline MatmulChoice choose_matmul(const Device& dev, const MatmulProblem& p) {
  return choose_matmul(dev.info(), dev.tuning(), p);
}

// The matmul family as the tuning file and the tuner know it (engine/ops/tuned_families.h).
struct MatmulFamily {
  using Problem = MatmulProblem;
  using Work = MatmulProblem;
  using Config = MatmulConfig;
  static constexpr const char* name = "matmul";
  static constexpr const char* title = "matmul";
  static std::string shape_class(const Problem& p) { return matmul_shape_class(p); }
  static std::string describe(const Config& c) { return c.describe(); }
  static std::string dims(const Problem& p);  // "f32 01 512x512x2048 ws"
  static nlohmann::json problem_json(const Problem& p);
  static Problem problem_of(const nlohmann::json& j);
  static nlohmann::json config_json(const Config& c);
  static Config config_of(const nlohmann::json& j);
  static std::string misfit(const DeviceInfo& info, const Config& c, const Problem& p) {
    return tuned_matmul_misfit(c, info, p);
  }
};

}  // namespace vkf::ops
