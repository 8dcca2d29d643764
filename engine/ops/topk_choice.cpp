#include "engine/ops/topk_choice.h"

#include <nlohmann/json.hpp>

#include "engine/json_limits.h"
#include "engine/tuning.h"

namespace vkf::ops {

namespace {
const char* bucket(uint32_t v, const uint32_t (&limits)[4], const char* const (&names)[5]) {
  for (int i = 0; i < 4; ++i)
    if (v <= limits[i]) return names[i];
  return names[4];
}
}  // namespace

std::string describe(const TopKConfig& c) {
  const std::string wg = "wg" + std::to_string(c.workgroup_size);
  switch (c.path) {
    case TopKPath::subgroup_rows:
      return "rows " + wg;
    case TopKPath::chunks:
      return "chunks " + wg + "x" + std::to_string(c.per_thread) + (c.prune ? " pruned" : "");
    case TopKPath::automatic:
      break;
  }
  return "automatic";
}

std::string topk_shape_class(const TopKProblem& p) {
  return std::string(dtype_name(p.dtype)) + "/r" +
         bucket(p.rows, {8, 64, 512, 4096}, {"8", "64", "512", "4k", "big"}) + "/v" +
         bucket(p.n, {1024, 4096, 16384, 65536}, {"1k", "4k", "16k", "64k", "big"}) + "/k" +
         bucket(p.k, {4, 8, 16, 32}, {"4", "8", "16", "32", "big"});
}

std::string topk_config_misfit(const DeviceInfo& info, const TopKConfig& c, const TopKProblem& p) {
  const uint32_t wg = c.workgroup_size;
  if (wg < 1 || wg > 1024 || (wg & (wg - 1)) != 0)
    return "workgroup size " + std::to_string(wg) + " is not a power of two up to 1024";
  if (wg > info.max_workgroup_invocations || wg > info.max_workgroup_size[0])
    return "workgroup size " + std::to_string(wg) + " exceeds the device's " +
           std::to_string(info.max_workgroup_invocations);
  if (c.path == TopKPath::subgroup_rows) {
    if (!info.subgroup_arithmetic) return "the device has no subgroup arithmetic";
    if (p.k > k_topk_rows_max_k)
      return "k " + std::to_string(p.k) + " is above the subgroup-per-row kernel's " +
             std::to_string(k_topk_rows_max_k);
    return "";
  }
  if (c.path != TopKPath::chunks) return "the path is left automatic";
  if (c.per_thread < 1 || c.per_thread > 32) return "per_thread must be in 1..32";
  const uint32_t chunk = wg * c.per_thread;
  if (uint64_t{chunk} * 8 + uint64_t{wg} * 8 > info.shared_memory_bytes)
    return "a chunk of " + std::to_string(chunk) + " entries exceeds shared memory";
  if (2 * uint64_t{p.k} > chunk)
    return "k " + std::to_string(p.k) + " is above half the chunk of " + std::to_string(chunk);
  return "";
}

TopKChoice choose_topk(const DeviceInfo& info, const Tuning* tuning, const TopKProblem& p,
                       const TopKConfig& requested) {
  if (requested.path != TopKPath::automatic)
    return {requested, ConfigSource::forced, "forced: " + describe(requested)};
  std::string passed_over;
  if (tuning) {
    const std::string cls = topk_shape_class(p);
    const auto& table = tuning->of<TopKFamily>();
    if (auto it = table.find(cls); it != table.end()) {
      const std::string misfit = topk_config_misfit(info, it->second, p);
      if (misfit.empty())
        return {it->second, ConfigSource::tuned,
                "tuned for " + cls + " (" + describe(it->second) + ", " + tuning->origin + ")"};
      passed_over =
          "; the tuned " + describe(it->second) + " for " + cls + " was passed over: " + misfit;
    }
  }
  TopKConfig c = requested;
  c.path = TopKPath::chunks;
  // The default chunk (64 x 32 entries, 16.5 KiB) is over a 16 KiB device's shared memory:
  // fewer entries an invocation until it fits, as long as the chunk keeps room for 2k.
  std::string smaller;
  while (c.per_thread > 1 &&
         uint64_t{c.workgroup_size} * (c.per_thread + 1) * 8 > info.shared_memory_bytes &&
         2 * uint64_t{p.k} <= uint64_t{c.workgroup_size} * (c.per_thread / 2)) {
    c.per_thread /= 2;
    smaller = " (a smaller chunk: the default's is over " +
              std::to_string(info.shared_memory_bytes) + " bytes of shared memory)";
  }
  return {c, ConfigSource::table, "default: " + describe(c) + smaller + passed_over};
}

std::string TopKFamily::dims(const Problem& p) {
  return std::string(dtype_name(p.dtype)) + " " + std::to_string(p.rows) + "x" +
         std::to_string(p.n) + " k" + std::to_string(p.k);
}

nlohmann::json TopKFamily::problem_json(const Problem& p) {
  return {{"dtype", dtype_name(p.dtype)}, {"rows", p.rows}, {"n", p.n}, {"k", p.k}};
}

TopKProblem TopKFamily::problem_of(const nlohmann::json& j) {
  return {storage_dtype_of(j.at("dtype").get<std::string>()), json_field<uint32_t>(j, "rows"),
          json_field<uint32_t>(j, "n"), json_field<uint32_t>(j, "k")};
}

nlohmann::json TopKFamily::config_json(const Config& c) {
  nlohmann::json j = {{"path", c.path == TopKPath::subgroup_rows ? "rows" : "chunks"},
                      {"workgroup_size", c.workgroup_size}};
  if (c.path == TopKPath::chunks) {
    j["per_thread"] = c.per_thread;
    j["prune"] = c.prune;
  }
  return j;
}

TopKConfig TopKFamily::config_of(const nlohmann::json& j) {
  TopKConfig c;
  const std::string path = j.at("path").get<std::string>();
  if (path == "rows")
    c.path = TopKPath::subgroup_rows;
  else if (path == "chunks")
    c.path = TopKPath::chunks;
  else
    throw Error("top-k path '" + path + "' is not rows or chunks");
  c.workgroup_size = json_field<uint32_t>(j, "workgroup_size");
  if (c.path == TopKPath::chunks) {
    c.per_thread = json_field<uint32_t>(j, "per_thread");
    c.prune = j.at("prune").get<bool>();
  }
  if (!c.workgroup_size) throw Error("top-k workgroup size 0");
  return c;
}

}  // namespace vkf::ops
