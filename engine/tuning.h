#pragma once
// Kernel configurations the tuner (tune/) found fastest on one device and driver, by op family
// and shape class. A Device holds at most one (Device::set_tuning); the ops ask it before their
// static tables, which stay the answer for every shape class it does not name.
#include <map>
#include <string>

#include "engine/ops/adam.h"
#include "engine/ops/attention.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/matmul_tuning.h"
#include "engine/ops/topk.h"

namespace vkf {

struct Tuning {
  std::string origin;  // where it came from (a tuning file's path), for the runs' one line
  // By ops::matmul_shape_class(): "f32/abt/m1k/n1k/k1k".
  std::map<std::string, ops::MatmulConfig> matmul;
  // By ops::attention_shape_class(): "f32/fwd/d64/causal/q64/k64" (path, tiles, rows, unroll).
  std::map<std::string, ops::AttentionTiles> attention;
  // By ops::layer_norm_shape_class(): "f32/fwd/d512" (reduction, workgroup size).
  std::map<std::string, ops::LayerNormConfig> layer_norm;
  // By ops::cross_entropy_shape_class(): "f32/v8k" (workgroup size, subgroup reductions).
  std::map<std::string, ops::RowKernelConfig> cross_entropy;
  // By ops::topk_shape_class(): "f32/r128/v64k/k8" (path, workgroup size, entries a lane).
  std::map<std::string, ops::TopKConfig> topk;
  // By ops::adam_shape_class(): "f32/n16m" (workgroup size, elements an invocation, reads).
  std::map<std::string, ops::AdamConfig> adam;
};

}  // namespace vkf
