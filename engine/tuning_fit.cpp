#include "engine/tuning_fit.h"

#include <algorithm>

#include "engine/ops/attention.h"

namespace vkf {
namespace {

template <class Entry>
void drop(std::vector<Entry>& entries, const DeviceInfo& info, std::vector<std::string>& notes) {
  std::erase_if(entries, [&](const Entry& t) {
    const std::string why = entry_misfit(t, info);
    if (!why.empty()) notes.push_back(entry_name(t) + ": " + why);
    return !why.empty();
  });
}

}  // namespace

std::string entry_name(const TunedMatmul& t) {
  return "matmul " + t.shape_class + " (" + t.config.describe() + ")";
}
std::string entry_name(const TunedAttention& t) {
  return "attention " + t.shape_class + " (" + ops::describe(t.config) + ")";
}
std::string entry_name(const TunedLayerNorm& t) {
  return "LayerNorm " + t.shape_class + " (" + ops::describe(t.config) + ")";
}
std::string entry_name(const TunedCrossEntropy& t) {
  return "cross-entropy " + t.shape_class + " (" + ops::describe(t.config) + ")";
}
std::string entry_name(const TunedTopK& t) {
  return "top-k " + t.shape_class + " (" + ops::describe(t.config) + ")";
}
std::string entry_name(const TunedAdam& t) {
  return "Adam " + t.shape_class + " (" + ops::describe(t.config) + ")";
}

std::string entry_misfit(const TunedMatmul& t, const DeviceInfo& info) {
  return ops::tuned_matmul_misfit(t.config, info, t.shape);
}
std::string entry_misfit(const TunedAttention& t, const DeviceInfo& info) {
  return ops::attention_tiles_misfit(info, t.shape.kernel, t.config, t.shape.d_k, t.shape.d_v);
}
std::string entry_misfit(const TunedLayerNorm& t, const DeviceInfo& info) {
  ops::LayerNormConfig c = t.config;
  // As choose_layer_norm reads an entry from before the read path was tuned.
  if (c.reads == ops::RowKernelConfig::Reads::automatic)
    c.reads = ops::RowKernelConfig::Reads::storage;
  return ops::layer_norm_config_misfit(info, c);
}
std::string entry_misfit(const TunedCrossEntropy& t, const DeviceInfo& info) {
  return ops::row_kernel_config_misfit(info, t.config);
}
std::string entry_misfit(const TunedTopK& t, const DeviceInfo& info) {
  return ops::topk_config_misfit(info, t.config, t.shape);
}
std::string entry_misfit(const TunedAdam& t, const DeviceInfo& info) {
  return ops::adam_config_misfit(info, t.config);
}

std::vector<std::string> drop_misfits(TuningFile& f, const DeviceInfo& info) {
  std::vector<std::string> notes;
  drop(f.matmul, info, notes);
  drop(f.attention, info, notes);
  drop(f.layer_norm, info, notes);
  drop(f.cross_entropy, info, notes);
  drop(f.topk, info, notes);
  drop(f.adam, info, notes);
  return notes;
}

}  // namespace vkf
