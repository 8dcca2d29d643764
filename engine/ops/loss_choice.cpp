#include "engine/ops/loss_choice.h"

#include <nlohmann/json.hpp>

#include "engine/json_limits.h"
#include "engine/tuning.h"

namespace vkf::ops {

std::string describe(const RowKernelConfig& c) {
  const char* sg = c.subgroup == RowKernelConfig::Subgroup::on    ? " subgroup"
                   : c.subgroup == RowKernelConfig::Subgroup::off ? " shared"
                                                                  : " auto";
  const char* reads = c.reads == RowKernelConfig::Reads::texel     ? " texel"
                      : c.reads == RowKernelConfig::Reads::storage ? " storage"
                                                                   : "";
  return "wg" + std::to_string(c.workgroup_size) + sg + reads;
}

bool same_kernel(const RowKernelConfig& a, const RowKernelConfig& b) {
  return a.workgroup_size == b.workgroup_size && a.subgroup == b.subgroup && a.reads == b.reads;
}

std::string cross_entropy_shape_class(const CrossEntropyProblem& p) {
  const uint32_t v = p.vocab;
  const char* b = v <= 1024    ? "1k"
                  : v <= 4096  ? "4k"
                  : v <= 16384 ? "16k"
                  : v <= 65536 ? "64k"
                               : "big";
  return std::string(dtype_name(p.dtype)) + "/v" + b;
}

RowKernelConfig row_kernel_default_config(const DeviceInfo& info) {
  // What resolve_workgroup_size and resolve_subgroup make of the defaults. The logits are read
  // from the storage buffer: a texel view made the kernel 1.8-1.9x faster on Mesa 22.3's
  // lavapipe, 0.8-0.9x on Mesa 25's and 0.5-0.7x on Mesa 26's (docs/performance.md), so no rule
  // by device type holds; the tuner times the view on the device in front of it.
  return {256,
          info.subgroup_arithmetic ? RowKernelConfig::Subgroup::on : RowKernelConfig::Subgroup::off,
          RowKernelConfig::Reads::storage};
}

std::string row_kernel_config_misfit(const DeviceInfo& info, const RowKernelConfig& c) {
  if (std::string why = workgroup_size_misfit(info, c.workgroup_size); !why.empty()) return why;
  if (c.subgroup == RowKernelConfig::Subgroup::automatic) return "subgroup left automatic";
  if (c.subgroup == RowKernelConfig::Subgroup::on && !info.subgroup_arithmetic)
    return "the device has no subgroup arithmetic";
  return "";
}

CrossEntropyChoice choose_cross_entropy(const DeviceInfo& info, const Tuning* tuning,
                                        const CrossEntropyProblem& p) {
  std::string passed_over;
  if (tuning) {
    const std::string cls = cross_entropy_shape_class(p);
    const auto& table = tuning->of<CrossEntropyFamily>();
    if (auto it = table.find(cls); it != table.end()) {
      RowKernelConfig tuned = it->second;
      if (tuned.reads == RowKernelConfig::Reads::automatic)
        tuned.reads = row_kernel_default_config(info).reads;
      const std::string misfit = row_kernel_config_misfit(info, tuned);
      if (misfit.empty())
        return {tuned, ConfigSource::tuned,
                "tuned for " + cls + " (" + describe(tuned) + ", " + tuning->origin + ")"};
      passed_over =
          "; the tuned " + describe(tuned) + " for " + cls + " was passed over: " + misfit;
    }
  }
  const RowKernelConfig c = row_kernel_default_config(info);
  return {c, ConfigSource::table, "default: " + describe(c) + passed_over};
}

std::string CrossEntropyFamily::dims(const Problem& p) {
  return std::string(dtype_name(p.dtype)) + " " + std::to_string(p.rows) + "x" +
         std::to_string(p.vocab);
}

nlohmann::json CrossEntropyFamily::problem_json(const Problem& p) {
  return {{"dtype", dtype_name(p.dtype)}, {"rows", p.rows}, {"vocab", p.vocab}};
}

CrossEntropyProblem CrossEntropyFamily::problem_of(const nlohmann::json& j) {
  return {storage_dtype_of(j.at("dtype").get<std::string>()), json_field<uint32_t>(j, "rows"),
          json_field<uint32_t>(j, "vocab")};
}

nlohmann::json CrossEntropyFamily::config_json(const Config& c) {
  return {{"workgroup_size", c.workgroup_size},
          {"subgroup", c.subgroup == RowKernelConfig::Subgroup::on    ? "on"
                       : c.subgroup == RowKernelConfig::Subgroup::off ? "off"
                                                                      : "automatic"},
          {"reads", row_reads_name(c.reads)}};
}

RowKernelConfig CrossEntropyFamily::config_of(const nlohmann::json& j) {
  RowKernelConfig c;
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  const std::string sg = j.at("subgroup").get<std::string>();
  if (sg == "on")
    c.subgroup = RowKernelConfig::Subgroup::on;
  else if (sg == "off")
    c.subgroup = RowKernelConfig::Subgroup::off;
  else
    throw Error("cross-entropy subgroup '" + sg + "' is not on or off");
  // Files written before the read path was tuned have none: the default's reads.
  c.reads = parse_row_reads(j.value("reads", std::string()), "cross-entropy");
  if (!c.workgroup_size) throw Error("cross-entropy workgroup size 0");
  return c;
}

}  // namespace vkf::ops
