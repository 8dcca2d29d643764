#pragma once
// The tuners of the op families after matmul (matmul_tuner.h): attention (per kernel: forward,
// dK/dV, dQ), LayerNorm (forward, backward), cross-entropy, top-k and Adam. Each times its
// candidates (attention_candidates.h, row_candidates.h) at one shape of the class through a Timer,
// and checks each one it would keep against the CPU reference (attention_check.h, row_checks.h),
// within a deadline (search.h).
#include <chrono>

#include "engine/device.h"
#include "engine/ops/op_problems.h"
#include "engine/tuning_file.h"
#include "tune/matmul_tuner.h"
#include "tune/search.h"
#include "tune/timer.h"

namespace vkf::tune {

// An attention problem with the batch and heads it is timed at.
using ops::AttentionWork;

// The backward kernels are timed within the whole backward (the delta kernel and the other
// kernel at its default run too), so their speed-ups are of the backward, not of one kernel.
TunedAttention tune_attention(Device& dev, const AttentionWork& work, Timer& timer,
                              const TunerOptions& options,
                              std::chrono::steady_clock::time_point deadline,
                              const StepReport& step = {});
// The backward is timed with its dgamma/dbeta kernels (which the configuration does not change).
TunedLayerNorm tune_layer_norm(Device& dev, const ops::LayerNormProblem& p, Timer& timer,
                               const TunerOptions& options,
                               std::chrono::steady_clock::time_point deadline,
                               const StepReport& step = {});
// Timed with the gradient (as training runs it).
TunedCrossEntropy tune_cross_entropy(Device& dev, const ops::CrossEntropyProblem& p, Timer& timer,
                                     const TunerOptions& options,
                                     std::chrono::steady_clock::time_point deadline,
                                     const StepReport& step = {});

// Timed at the decoder's shape (rows = beam x sentences, n = the vocabulary, k = 2 x beam).
TunedTopK tune_topk(Device& dev, const ops::TopKProblem& p, Timer& timer,
                    const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                    const StepReport& step = {});

// Timed over the problem's parameter count, up to 16M (far beyond any cache: a larger count
// only takes longer to time).
TunedAdam tune_adam(Device& dev, const ops::AdamProblem& p, Timer& timer,
                    const TunerOptions& options, std::chrono::steady_clock::time_point deadline,
                    const StepReport& step = {});

}  // namespace vkf::tune
