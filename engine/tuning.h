#pragma once
// Kernel configurations the tuner (tune/) found fastest on one device and driver, by op family
// and shape class. A Device holds at most one (Device::set_tuning); the ops ask it before their
// static tables, which stay the answer for every shape class it does not name.
#include <string>

#include "engine/ops/tuned_families.h"

namespace vkf {

struct Tuning {
  std::string origin;  // where it came from (a tuning file's path), for the runs' one line
  // Each family's configurations by its shape class (F::shape_class: "f32/abt/m1k/n1k/k1k").
  ops::PerFamily<ops::ConfigTable> tables;
  template <class F>
  ops::ConfigTable<F>& of() {
    return tables.of<F>();
  }
  template <class F>
  const ops::ConfigTable<F>& of() const {
    return tables.of<F>();
  }
};

}  // namespace vkf
