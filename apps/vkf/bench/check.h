#pragma once
// Comparing a kernel's output with the double-precision CPU reference (reference/), and
// the random inputs the rows use.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/vkf/bench/report.h"
#include "reference/comparison.h"
#include "reference/stored.h"

namespace vkf::bench {

// The comparison of an output with its reference is reference/comparison.h's, shared with the
// tests and the tuner.
using ref::Comparison;

// PASS when every comparison is within tolerance, else FAIL naming the worst; the details of
// all go into check_detail.
void set_check(Row& row, const std::vector<Comparison>& comparisons, const std::string& on);

// The random inputs and fp16 conversions are reference/stored.h's, shared with the tests and
// the tuner.
using ref::from_halves;
using ref::to_halves;
using ref::uniform;
// `count` distinct indices in [0, n), always including 0 and n - 1, sorted.
std::vector<uint32_t> sample_indices(std::mt19937& rng, uint32_t n, uint32_t count);

}  // namespace vkf::bench
