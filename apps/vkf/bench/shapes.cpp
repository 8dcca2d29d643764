#include "apps/vkf/bench/shapes.h"

#include "engine/error.h"

namespace vkf::bench {
namespace {

using F = MatmulForm;
constexpr Suite Q = Suite::quick, S = Suite::standard, L = Suite::full;

constexpr MatmulShape k_matmul[] = {
    {1024, 1024, 1024, F::ab, "square", S},
    {1024, 1024, 1024, F::abt, "square", Q},
    {1024, 1024, 1040, F::abt, "square, rows 4160 bytes apart", L},
    {4096, 512, 512, F::abt, "attention projection, 4096 tokens", Q},
    {4096, 2048, 512, F::abt, "FFN fc1, 4096 tokens", S},
    {4096, 512, 2048, F::abt, "FFN fc2, 4096 tokens", S},
    {4096, 37000, 512, F::abt, "vocabulary projection, 4096 tokens", S},
    {25000, 512, 512, F::abt, "attention projection, 25000 tokens", L},
    {25000, 2048, 512, F::abt, "FFN fc1, 25000 tokens", L},
    {25000, 512, 2048, F::abt, "FFN fc2, 25000 tokens", L},
    {25000, 37000, 512, F::abt, "vocabulary projection, 25000 tokens", L},
    {4096, 512, 2048, F::ab, "FFN fc1 backward dx, 4096 tokens", S},
    {2048, 512, 4096, F::atb, "FFN fc1 backward dW, 4096 tokens", S},
    {512, 512, 4096, F::atb, "attention projection backward dW, 4096 tokens", S},
};

constexpr AttentionShape k_attention[] = {
    {64, 64, false, false, Q},  {64, 64, true, true, S},   {16, 256, false, false, S},
    {392, 64, false, false, L}, {392, 64, true, false, L},
};

}  // namespace

const char* suite_name(Suite s) {
  return s == Suite::quick ? "quick" : s == Suite::standard ? "standard" : "full";
}

Suite parse_suite(const std::string& name) {
  for (Suite s : {Suite::quick, Suite::standard, Suite::full})
    if (name == suite_name(s)) return s;
  throw Error("unknown suite '" + name + "' (have: quick, standard, full)");
}

const char* form_name(MatmulForm f) {
  return f == F::ab ? "A B" : f == F::abt ? "A B^T" : "A^T B";
}

std::span<const MatmulShape> matmul_shapes() {
  return k_matmul;
}

bool f16_by_default(const MatmulShape& s) {
  return double(s.m) * s.n * s.k <= 4294967296.0;
}

std::span<const AttentionShape> attention_shapes() {
  return k_attention;
}

uint32_t train_tokens(const std::string& preset, bool cpu_device, Suite suite) {
  return suite == Suite::quick || (cpu_device && (preset == "base" || preset == "big")) ? 1024
                                                                                        : 4096;
}

}  // namespace vkf::bench
