#include "engine/ops/matmul_choice.h"

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
    if (auto it = tuning->matmul.find(cls); it != tuning->matmul.end()) {
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

}  // namespace vkf::ops
