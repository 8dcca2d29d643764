#include "tune/matmul_check.h"

#include <random>
#include <vector>

#include "engine/error.h"
#include "reference/matmul_case.h"
#include "reference/stored.h"

namespace vkf::tune {
namespace {

// One shape through the matmul harness (reference/matmul_case.h): the candidate forced, the
// problem's storage type and transposes, C poisoned where beta is 0, and every element held to
// the tests' tolerance relative to the sum of |terms|.
std::string check_shape(Device& dev, const ops::MatmulConfig& cfg, const ops::MatmulProblem& p,
                        ref::MatmulCase s, bool sabotage) {
  s.trans_a = p.trans_a, s.trans_b = p.trans_b, s.dtype = p.dtype, s.config = &cfg;
  std::mt19937 rng(s.m * 131 + s.n * 7 + s.k);
  const ref::MatmulRun run(dev, s, rng);
  try {
    Recorder rec(dev);
    run.record(rec, sabotage ? ref::k_wrong_bits : 0);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  const ref::Comparison cmp = run.compare(ref::matmul_tolerance(s.dtype));
  if (cmp.ok()) return "";
  return "wrong at " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
         " batch " + std::to_string(s.batch) + ": " + cmp.describe();
}

ref::MatmulCase shape(uint32_t m, uint32_t n, uint32_t k, uint32_t batch, float beta,
                      ops::Epilogue epilogue, uint32_t split_k = 1) {
  ref::MatmulCase c;
  c.m = m, c.n = n, c.k = k, c.batch = batch, c.beta = beta, c.epilogue = epilogue;
  c.split_k = split_k;
  return c;
}

}  // namespace

std::string check_matmul(Device& dev, const ops::MatmulConfig& candidate,
                         const ops::MatmulProblem& p, const Sabotage& sabotage) {
  const bool wrong = sabotage && sabotage(candidate.describe());
  std::vector<ref::MatmulCase> shapes{shape(37, 45, 29, 2, 0.0f, ops::Epilogue::none),
                                      shape(36, 68, 44, 1, 0.5f, ops::Epilogue::bias)};
  // Where the problem has a split-k workspace and the candidate may split, its split too:
  // three slices of whole 256-byte runs, the last shorter, with beta and the epilogue (the
  // reduce's). matmul_split_k may throw on it: the check then says the op refused it.
  if (p.workspace && candidate.split_k.value_or(2) > 1 && ops::matmul_kernel_splits(candidate)) {
    const uint32_t granule = 256 / dtype_bytes(p.dtype);
    shapes.push_back(shape(37, 45, 5 * granule + 29, 1, 0.5f, ops::Epilogue::bias, 3));
  }
  try {
    for (const ref::MatmulCase& s : shapes)
      if (std::string why = check_shape(dev, candidate, p, s, wrong); !why.empty()) return why;
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return "";
}

}  // namespace vkf::tune
