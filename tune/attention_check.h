#pragma once
// The tuner's correctness guard for attention: a candidate configuration of one kernel runs the
// forward and the backward (the candidate at its kernel, the defaults at the others) on a small
// problem of the same storage type, head dims and masking (two sequences, one with padded keys,
// lengths no tile divides), and every output (O, the log-sum-exp, dQ, dK, dV) is compared with
// the double-precision reference (reference/attention.h). Outputs start poisoned.
#include <string>

#include "engine/device.h"
#include "engine/ops/attention_choice.h"
#include "tune/matmul_check.h"

namespace vkf::tune {

// "" when `candidate` computes `p`'s kind of attention right on `dev`; else what was wrong.
std::string check_attention(Device& dev, const ops::AttentionTiles& candidate,
                            const ops::AttentionProblem& p, const Sabotage& sabotage = {});

}  // namespace vkf::tune
