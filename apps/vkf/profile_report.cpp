#include "apps/vkf/profile_report.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "engine/device_profile.h"
#include "engine/error.h"
#include "engine/kernel.h"
#include "engine/ops/attention_choice.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/matmul_choice.h"
#include "engine/ops/topk_choice.h"
#include "engine/shader_bindings.h"
#include "model/precision.h"

namespace vkf::app {

std::string profile_report(DeviceInfo info, const std::string& profile_path) {
  const ProfileApplied applied = apply_device_profile(info, profile_path);
  std::ostringstream s;
  s << "profile " << applied.name << " (" << profile_path << ")\n";
  std::vector<std::string> said;  // an array limit's three values make one line
  for (const auto& c : applied.clamps) {
    if (std::find(said.begin(), said.end(), c) != said.end()) continue;
    said.push_back(c);
    s << "  not applied, beyond this device: " << c << "\n";
  }
  s << devices_table({info});
  if (info.api_version < VK_API_VERSION_1_2) {
    s << "refused: " << info.name << " reports Vulkan " << VK_API_VERSION_MAJOR(info.api_version)
      << "." << VK_API_VERSION_MINOR(info.api_version) << "; vkformer needs Vulkan 1.2\n";
    return s.str();
  }
  // The choices the engine makes with no tuning file, for a base model's shapes (d_model 512,
  // 8 heads of 64, d_ff 2048, a 32k vocabulary, a batch of 4096 tokens, sequences of 128).
  s << "precision auto: "
    << model::precision_name(model::resolve_precision(model::PrecisionChoice::automatic, info))
    << "\n";
  try {
    model::resolve_precision(model::PrecisionChoice::fp16, info);
    s << "precision fp16: runs\n";
  } catch (const Error& e) {
    s << "precision fp16: refused: " << e.what() << "\n";
  }
  for (DType t : {DType::f32, DType::f16}) {
    if (t == DType::f16 && !info.storage16) continue;
    const char* dt = t == DType::f16 ? "f16" : "f32";
    const auto mm = ops::choose_matmul(info, nullptr, {t, false, true, 4096, 2048, 512});
    s << "matmul " << dt << " 4096x2048x512: " << mm.why << "\n";
    const auto at = ops::choose_attention(
        info, nullptr, {t, ops::AttentionKernel::forward, 64, 64, 128, 128, true});
    s << "attention " << dt << " forward d64 len128: " << ops::describe(at.tiles) << ": " << at.why
      << "\n";
    const auto ln = ops::choose_layer_norm(info, nullptr, {t, false, 4096, 512});
    s << "layer norm " << dt << " d512: " << ops::describe(ln.config) << ": " << ln.why << "\n";
  }
  const auto ce = ops::choose_cross_entropy(info, nullptr, {DType::f32, 4096, 32000});
  s << "cross entropy f32 vocab 32000: " << ops::describe(ce.config) << ": " << ce.why << "\n";
  const auto tk = ops::choose_topk(info, nullptr, {DType::f32, 4, 32000, 4});
  s << "top-k f32 k4 of 32000: " << ops::describe(tk.config) << ": " << tk.why << "\n";
  // The widest kernels the engine binds: a device that allows fewer refuses them by name.
  KernelLimits limits{info.max_stage_storage_buffers, info.max_stage_sampled_images,
                      info.max_stage_resources, info.max_push_constant_bytes};
  s << "bindings: " << limits.storage_buffers << " storage buffers, " << limits.push_bytes
    << " bytes of push constants a kernel\n";
  // Read from the kernels' SPIR-V: the ones this device cannot bind, refused by name when a run
  // creates one, and those the engine replaces by their _texel twin (LayerNorm's forward and
  // attention's backward, in every training step), which read some inputs through texel views.
  std::vector<WideKernel> refused, twinned;
  for (WideKernel& k : kernels_over_storage_limit(limits.storage_buffers))
    (k.texel_twin.empty() ? refused : twinned).push_back(std::move(k));
  auto list = [&s](const std::vector<WideKernel>& kernels) {
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (i == 8) {
        s << " and " << kernels.size() - i << " more";
        break;
      }
      s << (i ? ", " : " ") << kernels[i].name << " (" << kernels[i].storage_buffers << ")";
    }
    s << "\n";
  };
  if (!twinned.empty()) {
    s << "through texel views: " << twinned.size() << " kernels bind more storage buffers than the "
      << limits.storage_buffers << " a stage allows, and their _texel twins fit:";
    list(twinned);
  }
  if (!refused.empty()) {
    s << "refused: " << refused.size() << " kernels bind more storage buffers than the "
      << limits.storage_buffers
      << " a stage this device allows (maxPerStageDescriptorStorageBuffers):";
    list(refused);
  }
  return s.str();
}

}  // namespace vkf::app
