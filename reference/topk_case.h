#pragma once
// One top-k problem as every caller that checks ops::topk against the reference poses it: the
// shader tests (tests/shaders/test_small_ops.cpp) and the tuner's correctness guard
// (tune/topk_family.cpp). Written once so that they cannot drift apart: a TopKRun holds the
// values as their storage type holds them, poisons the outputs (NaN values, indices no row
// has), records the selection (with or without log-softmax) and compares it with
// reference/topk's stable sort: the indices exactly, the values exactly or, as log-softmax,
// within fp32 rounding of the double log-probabilities.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/topk.h"
#include "engine/ops/topk_choice.h"
#include "reference/comparison.h"

namespace vkf::ref {

struct TopKCase {
  uint32_t rows = 1, n = 1, k = 1;
  DType dtype = DType::f32;  // storage of the values
  ops::TopKConfig config;    // forced where its path is set; automatic: the engine's choice
  bool log_softmax = false;  // the values are logits; the outputs their log-probabilities

  // "[3, 5000] k 8, chunks wg64x32 pruned, f16, log-softmax".
  std::string describe() const;
};

// What the values of a row look like, each exact in f16 (so f16 and f32 storage select alike).
enum class TopKValues {
  ties,     // multiples of 1/8 in [-18.75, 6.25): many ties; every 7th entry -inf (masked)
  masked,   // all -inf but every 1700th entry: rows with fewer than k finite values
  rounded,  // uniform in [-1, 1), rounded to f16: ties where f16 merges fp32 values
};
std::vector<float> random_topk_values(const TopKCase& c, TopKValues kind, std::mt19937& rng);

// The log-softmax values' tolerance; the indices and plain values are exact.
constexpr Tolerance k_topk_log_softmax_tolerance{2e-5, 1e-5};

struct TopKOutputs {
  std::vector<float> values;      // [rows, k]
  std::vector<uint32_t> indices;  // [rows, k]
};

class TopKRun {
 public:
  TopKRun(Device& dev, const TopKCase& c, std::vector<float> values);
  TopKRun(Device& dev, const TopKCase& c, TopKValues kind, std::mt19937& rng)
      : TopKRun(dev, c, random_topk_values(c, kind, rng)) {}

  const TopKCase& spec() const { return c_; }
  ops::TopKArgs args() const;
  // Records ops::topk; the outputs were poisoned when the run was made: record once per run.
  void record(Recorder& rec) const;
  // Overwrites the first index with ref::k_wrong_bits, as a wrong kernel would have written it
  // (the tuner's test hook).
  void corrupt(Recorder& rec) const;

  TopKOutputs outputs() const;
  // "indices" (exactly the stable sort's: value descending, ties to the lower index) and
  // "values" (exactly, or as log-softmax within k_topk_log_softmax_tolerance; -inf exactly).
  std::vector<Comparison> compare() const;

 private:
  Device& dev_;
  TopKCase c_;
  std::vector<float> x_;  // as stored
  Buffer values_, out_values_, out_indices_, scratch_;
};

}  // namespace vkf::ref
