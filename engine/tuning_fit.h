#pragma once
// A tuning file's entries are data from outside (hand-edited, another build's, another device's
// copied by hand): each is held to the checks a forced configuration meets (the family's
// misfit: matmul_config_misfit and its siblings) when the file is loaded, so that a
// configuration the kernels cannot run right never reaches them. The correctness check against
// the reference (tune/tuning_verify.h) comes after.
#include <string>
#include <vector>

#include "engine/device_info.h"
#include "engine/tuning_file.h"

namespace vkf {

// "matmul f32/abt/m16/n128/k128 (wg64 64x64x8 t4x4 shared)": how notes name an entry.
template <class F>
std::string entry_name(const TunedOf<F>& t) {
  return std::string(F::title) + " " + t.shape_class + " (" + F::describe(t.config) + ")";
}

// Removes from `file` every entry `info` cannot run; one note a removed entry: "<entry_name>:
// <why>", so that its class runs the default.
std::vector<std::string> drop_misfits(TuningFile& file, const DeviceInfo& info);

}  // namespace vkf
