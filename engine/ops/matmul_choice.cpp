#include "engine/ops/matmul_choice.h"

#include <nlohmann/json.hpp>

#include "engine/json_limits.h"
#include "engine/shader_registry.h"
#include "engine/tuning.h"

namespace vkf::ops {
namespace {

const char* bucket(uint32_t x) {
  return x <= 16 ? "16" : x <= 128 ? "128" : x <= 1024 ? "1k" : "big";
}

}  // namespace

std::string tuned_matmul_misfit(const MatmulConfig& c, const DeviceInfo& info,
                                const MatmulProblem& p) {
  if (c.coopmat && p.dtype != DType::f16)
    return "a tensor-core configuration for " + std::string(dtype_name(p.dtype));
  if (c.coopmat && shaders::find(c.coopmat_kernel()).empty())
    return "this build lacks its cooperative-matrix kernel";
  return matmul_config_misfit(c, info);
}

std::string matmul_shape_class(const MatmulProblem& p) {
  const char* form = p.trans_a ? (p.trans_b ? "atbt" : "atb") : (p.trans_b ? "abt" : "ab");
  return std::string(dtype_name(p.dtype)) + "/" + form + "/m" + bucket(p.m) + "/n" + bucket(p.n) +
         "/k" + bucket(p.k);
}

const char* matmul_source_name(MatmulSource s) {
  return s == MatmulSource::forced ? "forced" : s == MatmulSource::tuned ? "tuned" : "table";
}

MatmulChoice choose_matmul(const DeviceInfo& info, const Tuning* tuning, const MatmulProblem& p) {
  std::string passed_over;
  if (tuning) {
    const std::string cls = matmul_shape_class(p);
    if (auto it = tuning->of<MatmulFamily>().find(cls); it != tuning->of<MatmulFamily>().end()) {
      const std::string misfit = tuned_matmul_misfit(it->second, info, p);
      if (misfit.empty())
        return {it->second, MatmulSource::tuned,
                "tuned for " + cls + " (" + it->second.describe() + ", " + tuning->origin + ")"};
      passed_over =
          "; the tuned " + it->second.describe() + " for " + cls + " was passed over: " + misfit;
    }
  }
  const TableChoice t = table_matmul_config(info, p.trans_b, p.dtype, p.m, p.n);
  return {*t.config, MatmulSource::table,
          "table row " + t.config->name + ": " + t.why + passed_over};
}

std::string MatmulFamily::dims(const Problem& p) {
  return std::string(dtype_name(p.dtype)) + " " + std::to_string(p.trans_a) +
         std::to_string(p.trans_b) + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
         std::to_string(p.k) + (p.workspace ? " ws" : "");
}

nlohmann::json MatmulFamily::problem_json(const Problem& p) {
  nlohmann::json j = {{"dtype", dtype_name(p.dtype)},
                      {"trans_a", p.trans_a},
                      {"trans_b", p.trans_b},
                      {"m", p.m},
                      {"n", p.n},
                      {"k", p.k}};
  if (p.workspace) j["workspace"] = true;  // absent in files from before split-k
  return j;
}

MatmulProblem MatmulFamily::problem_of(const nlohmann::json& j) {
  return {storage_dtype_of(j.at("dtype").get<std::string>()),
          j.at("trans_a").get<bool>(),
          j.at("trans_b").get<bool>(),
          json_field<uint32_t>(j, "m"),
          json_field<uint32_t>(j, "n"),
          json_field<uint32_t>(j, "k"),
          j.value("workspace", false)};
}

nlohmann::json MatmulFamily::config_json(const Config& c) {
  nlohmann::json j = {{"name", c.name},       {"workgroup", c.workgroup},
                      {"bm", c.bm},           {"bn", c.bn},
                      {"bk", c.bk},           {"tm", c.tm},
                      {"tn", c.tn},           {"shared", c.shared},
                      {"coopmat", c.coopmat}, {"khr", c.khr},
                      {"stages", c.stages},   {"texel", nullptr}};
  if (c.texel) j["texel"] = *c.texel;
  if (c.nv2) j["nv2"] = true;  // absent in files from before the coopmat2 kernel, and for others
  if (c.split_k) j["split_k"] = *c.split_k;  // absent where the split was not tuned
  return j;
}

MatmulConfig MatmulFamily::config_of(const nlohmann::json& j) {
  MatmulConfig c;
  c.name = j.at("name").get<std::string>();
  c.workgroup = json_field<uint32_t>(j, "workgroup");
  c.bm = json_field<uint32_t>(j, "bm");
  c.bn = json_field<uint32_t>(j, "bn");
  c.bk = json_field<uint32_t>(j, "bk");
  c.tm = json_field<uint32_t>(j, "tm");
  c.tn = json_field<uint32_t>(j, "tn");
  c.shared = j.at("shared").get<bool>();
  c.coopmat = j.at("coopmat").get<bool>();
  c.khr = j.at("khr").get<bool>();
  c.stages = json_field<uint32_t>(j, "stages", 1u);  // files from before stages were one
  if (!j.at("texel").is_null()) c.texel = j.at("texel").get<bool>();
  c.nv2 = j.value("nv2", false);
  if (c.nv2 && (!c.coopmat || c.khr))
    throw Error("configuration '" + c.name + "' is a coopmat2 row without coopmat, or with khr");
  // Values the kernel divides by or sizes arrays with: a hand-edited zero must not reach it.
  if (!c.workgroup || !c.bm || !c.bn || !c.bk || !c.tm || !c.tn || c.bm % c.tm || c.bn % c.tn)
    throw Error("configuration '" + c.name +
                "' has a zero size or a tile not a multiple of its "
                "block");
  if (c.stages < 1 || c.stages > 2 || (c.stages == 2 && !c.khr))
    throw Error("configuration '" + c.name + "' has " + std::to_string(c.stages) +
                " stages (1, or 2 on a KHR row)");
  if (j.contains("split_k")) {
    c.split_k = json_field<uint32_t>(j, "split_k");
    if (*c.split_k < 1 || *c.split_k > k_matmul_max_split_k)
      throw Error("configuration '" + c.name + "' splits k into " + std::to_string(*c.split_k) +
                  " slices (1 to " + std::to_string(k_matmul_max_split_k) + ")");
  }
  return c;
}

}  // namespace vkf::ops
