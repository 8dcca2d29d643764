#pragma once
// The tuner's correctness guard: a candidate configuration runs small matmuls of the problem's
// storage type and transposes through the matmul harness (reference/matmul_case.h), so
// that a fast wrong kernel never wins. Two shapes: odd sizes (partial tiles, scalar reads, k
// tails) with a batch of two, and 4-aligned ones (the vector and texel reads) with beta and a
// bias epilogue; where the problem has a split-k workspace (MatmulProblem::workspace) and the
// candidate may split, a third whose k is cut into three slices. C starts poisoned where beta
// is 0.
#include <functional>
#include <string>

#include "engine/device.h"
#include "engine/ops/matmul_choice.h"

namespace vkf::tune {

// Test hook: true for a candidate (by its description, e.g. MatmulConfig::describe()) whose
// output the check corrupts after its kernel, as a wrong kernel would have written it. Every
// family's check takes it.
using Sabotage = std::function<bool(const std::string& candidate)>;

// "" when `candidate` computes the problem's kind of matmul right on `dev`; else what was wrong
// (the first element out of tolerance, or the error the op threw).
std::string check_matmul(Device& dev, const ops::MatmulConfig& candidate,
                         const ops::MatmulProblem& p, const Sabotage& sabotage = {});

}  // namespace vkf::tune
