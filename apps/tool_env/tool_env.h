#pragma once
// The environment variables of the vkf command, the tests and the benchmarks, mapped onto the
// engine's options (the engine itself reads none):
//   VKF_VALIDATION=1               InstanceOptions::validation
//   VKF_LAYERS=NAME[:NAME...]      InstanceOptions::layers (after validation, nearer the driver)
//   VKF_CACHE_DIR=DIR              DeviceOptions::pipeline_cache_dir (default
//                                  $XDG_CACHE_HOME/vkformer, else ~/.cache/vkformer) and the
//                                  lavapipe shader caches under it (engine/cpu_driver.h)
//   VKF_MATMUL_TEXEL=0|1           DeviceOptions::ops.matmul_texel_views
//   VKF_MATMUL_SPLIT_K=0|1         DeviceOptions::ops.matmul_split_k
//   VKF_ATTENTION_PATH=tiled|rows  DeviceOptions::ops.attention_rows ("automatic" = unset)
//   VKF_TUNE=auto|off|FILE         the default of --tune (train, translate, bench; "auto"
//                                  unset); the tests set off
//   VKF_TUNE_BUDGET=SECONDS        the budget of --tune auto's first run on a device (30)
// A value the tools cannot read throws vkf::Error naming the variable.
#include <string>

#include "engine/cpu_driver.h"
#include "engine/device.h"
#include "engine/instance.h"

namespace vkf::tool {

InstanceOptions instance_options(InstanceOptions base = {});
// `base` with the variables above applied; an explicit base.pipeline_cache_dir is kept.
DeviceOptions device_options(DeviceOptions base = {});
// VKF_TUNE, else "auto".
std::string tune_default();
// VKF_TUNE_BUDGET (a positive number of seconds), else 30.
double tune_budget_seconds();
// VKF_CACHE_DIR, else $XDG_CACHE_HOME/vkformer, else $HOME/.cache/vkformer; "" without any.
std::string cache_dir();
// vkf::configure_cpu_driver(cache_dir()): call before the first Instance.
const CpuDriverSettings& configure_cpu_driver();

}  // namespace vkf::tool
