#pragma once
// Comparing a kernel's output with the double-precision CPU reference (reference/), and
// the random inputs the rows use.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "apps/vkf/bench/report.h"
#include "reference/stored.h"

namespace vkf::bench {

// Worst |got - want| / (atol + rtol * scale) over everything added: <= 1 passes. `scale` is the
// element's magnitude (|want|, or the sum of |terms| for a dot product).
class Comparison {
 public:
  explicit Comparison(std::string what) : what_(std::move(what)) {}
  void add(double got, double want, double scale, double atol, double rtol);
  void add_all(const std::vector<float>& got, const std::vector<double>& want, double atol,
               double rtol);
  bool ok() const { return ok_; }
  double worst() const { return worst_; }
  size_t count() const { return count_; }
  // "1 048 576 elements of o: worst error 0.02 of the tolerance (got ..., want ...)"
  std::string describe() const;

 private:
  std::string what_;
  bool ok_ = true;
  double worst_ = 0, worst_got_ = 0, worst_want_ = 0;
  size_t count_ = 0, worst_index_ = 0;
};

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
