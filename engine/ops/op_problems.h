#pragma once
// Every op problem a workload runs, by tuned family: what a model states about itself
// (model/op_problems.h), what `vkf bench` runs, and what the tuner searches (tune/model_tuner.h).
#include <vector>

#include "engine/ops/adam.h"
#include "engine/ops/attention_choice.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/matmul_choice.h"
#include "engine/ops/topk_choice.h"

namespace vkf::ops {

// An attention problem with the batch and heads it runs at (the shape class leaves them out).
struct AttentionWork {
  AttentionProblem problem;
  uint32_t batch = 1, heads = 1;
};

struct OpProblems {
  std::vector<MatmulProblem> matmul;
  std::vector<AttentionWork> attention;
  std::vector<LayerNormProblem> layer_norm;
  std::vector<CrossEntropyProblem> cross_entropy;
  std::vector<TopKProblem> topk;  // decoding: beam search's candidates
  std::vector<AdamProblem> adam;  // training: the optimizer over the parameters
};

}  // namespace vkf::ops
