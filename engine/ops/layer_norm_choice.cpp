#include "engine/ops/layer_norm_choice.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>

#include "engine/json_limits.h"
#include "engine/tuning.h"

namespace vkf::ops {

const char* row_reduce_name(RowReduce r) {
  switch (r) {
    case RowReduce::shared:
      return "shared";
    case RowReduce::subgroup:
      return "subgroup";
    case RowReduce::subgroup_rows:
      return "subgroup_rows";
    default:
      return "automatic";
  }
}

bool parse_row_reduce(const std::string& name, RowReduce& out) {
  for (RowReduce r :
       {RowReduce::automatic, RowReduce::shared, RowReduce::subgroup, RowReduce::subgroup_rows})
    if (name == row_reduce_name(r)) {
      out = r;
      return true;
    }
  return false;
}

std::string describe(const LayerNormConfig& c) {
  const char* reads = c.reads == RowKernelConfig::Reads::texel     ? " texel"
                      : c.reads == RowKernelConfig::Reads::storage ? " storage"
                                                                   : "";
  return std::string(row_reduce_name(c.reduce)) + " wg" + std::to_string(c.workgroup_size) + reads;
}

std::string layer_norm_shape_class(const LayerNormProblem& p) {
  const std::string d = p.d > 4096 ? "big" : std::to_string(std::max(32u, std::bit_ceil(p.d)));
  return std::string(dtype_name(p.dtype)) + (p.backward ? "/bwd/d" : "/fwd/d") + d;
}

LayerNormConfig layer_norm_default_config(const DeviceInfo& info, uint32_t d) {
  // A subgroup per row when rows are short for a subgroup (at most 32 columns a lane) and
  // always on CPU devices, where barriers are dear; else a workgroup per row.
  RowReduce r = RowReduce::shared;
  if (info.subgroup_arithmetic)
    r = info.is_cpu() || d <= 32 * info.subgroup_size ? RowReduce::subgroup_rows
                                                      : RowReduce::subgroup;
  // A workgroup per row takes about four columns an invocation, 32..256 invocations; a subgroup
  // per row takes 64 invocations (one to eight rows).
  const uint32_t limit = std::min(info.max_workgroup_invocations, info.max_workgroup_size[0]);
  const uint32_t wg = r == RowReduce::subgroup_rows
                          ? 64
                          : std::clamp<uint32_t>(std::bit_ceil((d + 3) / 4), 32, 256);
  // Storage-buffer reads: texel views made the kernels faster on Mesa 22.3's lavapipe only
  // (docs/performance.md), so the tuner times them on the device in front of it.
  return {std::min(wg, std::bit_floor(limit)), r, RowKernelConfig::Reads::storage};
}

std::string layer_norm_config_misfit(const DeviceInfo& info, const LayerNormConfig& c) {
  if (c.reduce == RowReduce::automatic) return "reduction left automatic";
  if (c.reduce != RowReduce::shared && !info.subgroup_arithmetic)
    return "the device has no subgroup arithmetic";
  const uint32_t limit = std::min(info.max_workgroup_invocations, info.max_workgroup_size[0]);
  if (!std::has_single_bit(c.workgroup_size) || c.workgroup_size > limit)
    return "workgroup size " + std::to_string(c.workgroup_size) + " is not a power of two up to " +
           std::to_string(limit);
  return "";
}

LayerNormChoice choose_layer_norm(const DeviceInfo& info, const Tuning* tuning,
                                  const LayerNormProblem& p) {
  std::string passed_over;
  if (tuning) {
    const std::string cls = layer_norm_shape_class(p);
    const auto& table = tuning->of<LayerNormFamily>();
    if (auto it = table.find(cls); it != table.end()) {
      const LayerNormConfig tuned = LayerNormFamily::as_run(it->second);
      const std::string misfit = layer_norm_config_misfit(info, tuned);
      if (misfit.empty())
        return {tuned, ConfigSource::tuned,
                "tuned for " + cls + " (" + describe(tuned) + ", " + tuning->origin + ")"};
      passed_over =
          "; the tuned " + describe(tuned) + " for " + cls + " was passed over: " + misfit;
    }
  }
  const LayerNormConfig c = layer_norm_default_config(info, p.d);
  return {c, ConfigSource::table, "default: " + describe(c) + passed_over};
}

LayerNormConfig LayerNormFamily::as_run(Config c) {
  if (c.reads == RowKernelConfig::Reads::automatic) c.reads = RowKernelConfig::Reads::storage;
  return c;
}

std::string LayerNormFamily::dims(const Problem& p) {
  return std::string(dtype_name(p.dtype)) + (p.backward ? " bwd " : " fwd ") +
         std::to_string(p.rows) + "x" + std::to_string(p.d);
}

nlohmann::json LayerNormFamily::problem_json(const Problem& p) {
  return {{"dtype", dtype_name(p.dtype)}, {"backward", p.backward}, {"rows", p.rows}, {"d", p.d}};
}

LayerNormProblem LayerNormFamily::problem_of(const nlohmann::json& j) {
  return {storage_dtype_of(j.at("dtype").get<std::string>()), j.at("backward").get<bool>(),
          json_field<uint32_t>(j, "rows"), json_field<uint32_t>(j, "d")};
}

nlohmann::json LayerNormFamily::config_json(const Config& c) {
  return {{"reduce", row_reduce_name(c.reduce)},
          {"workgroup_size", c.workgroup_size},
          {"reads", row_reads_name(c.reads)}};
}

LayerNormConfig LayerNormFamily::config_of(const nlohmann::json& j) {
  LayerNormConfig c;
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  const std::string r = j.at("reduce").get<std::string>();
  if (!parse_row_reduce(r, c.reduce) || c.reduce == RowReduce::automatic)
    throw Error("LayerNorm reduction '" + r + "' is not shared, subgroup or subgroup_rows");
  if (!c.workgroup_size) throw Error("LayerNorm workgroup size 0");
  // Files written before the read path was tuned have none: the default's reads.
  c.reads = parse_row_reads(j.value("reads", std::string()), "LayerNorm");
  return c;
}

std::string LayerNormFamily::misfit(const DeviceInfo& info, const Config& c, const Problem&) {
  return layer_norm_config_misfit(info, as_run(c));
}

}  // namespace vkf::ops
