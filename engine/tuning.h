#pragma once
// Kernel configurations the tuner (tune/) found fastest on one device and driver, by op family
// and shape class. A Device holds at most one (Device::set_tuning); the ops ask it before their
// static tables, which stay the answer for every shape class it does not name.
#include <map>
#include <string>

#include "engine/ops/matmul_tuning.h"

namespace vkf {

struct Tuning {
  std::string origin;  // where it came from (a tuning file's path), for the runs' one line
  // By ops::matmul_shape_class(): "f32/abt/m1k/n1k/k1k".
  std::map<std::string, ops::MatmulConfig> matmul;
};

}  // namespace vkf
