#pragma once
// A tuning file's entries are data from outside (hand-edited, another build's, another device's
// copied by hand): each is held to the checks a forced configuration meets (matmul_config_misfit
// and its siblings) when the file is loaded, so that a configuration the kernels cannot run
// right never reaches them. The correctness check against the reference (tune/tuning_verify.h)
// comes after.
#include <string>
#include <vector>

#include "engine/device_info.h"
#include "engine/tuning_file.h"

namespace vkf {

// "matmul f32/abt/m16/n128/k128 (wg64 64x64x8 t4x4 shared)": how notes name an entry.
std::string entry_name(const TunedMatmul& t);
std::string entry_name(const TunedAttention& t);
std::string entry_name(const TunedLayerNorm& t);
std::string entry_name(const TunedCrossEntropy& t);
std::string entry_name(const TunedTopK& t);
std::string entry_name(const TunedAdam& t);

// Why `info` cannot run `t`'s configuration on its shape, or "".
std::string entry_misfit(const TunedMatmul& t, const DeviceInfo& info);
std::string entry_misfit(const TunedAttention& t, const DeviceInfo& info);
std::string entry_misfit(const TunedLayerNorm& t, const DeviceInfo& info);
std::string entry_misfit(const TunedCrossEntropy& t, const DeviceInfo& info);
std::string entry_misfit(const TunedTopK& t, const DeviceInfo& info);
std::string entry_misfit(const TunedAdam& t, const DeviceInfo& info);

// Removes from `file` every entry `info` cannot run; one note a removed entry: "<entry_name>:
// <why>", so that its class runs the default.
std::vector<std::string> drop_misfits(TuningFile& file, const DeviceInfo& info);

}  // namespace vkf
