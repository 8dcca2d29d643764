#pragma once
// The worst error of a kernel's output against its double-precision reference, relative to the
// tolerance: what the shader tests, `vkf bench`'s rows and the tuner's checks all report.
#include <cstddef>
#include <string>
#include <vector>

namespace vkf::ref {

// An element passes within atol + rtol * scale, where scale is its magnitude (|want|, or the sum
// of |terms| for a dot product).
struct Tolerance {
  double atol = 0, rtol = 0;
};

// Worst |got - want| / (atol + rtol * scale) over everything added: <= 1 passes. A NaN or an
// infinity never does.
class Comparison {
 public:
  explicit Comparison(std::string what) : what_(std::move(what)) {}
  void add(double got, double want, double scale, double atol, double rtol);
  void add(double got, double want, double scale, const Tolerance& tol) {
    add(got, want, scale, tol.atol, tol.rtol);
  }
  void add_all(const std::vector<float>& got, const std::vector<double>& want, double atol,
               double rtol);
  // An element that must come back bit for bit as it was (a guard zone, row padding): `same`
  // passes with no error, anything else fails outright.
  void add_exact(bool same, double got, double want);
  const std::string& what() const { return what_; }
  bool ok() const { return ok_; }
  double worst() const { return worst_; }
  size_t count() const { return count_; }
  // The position, in the order added, of the worst value.
  size_t worst_index() const { return worst_index_; }
  // "1048576 values of o, worst 0.02 of the tolerance (got ..., want ...)"
  std::string describe() const;

 private:
  void note(double r, double got, double want);

  std::string what_;
  bool ok_ = true;
  double worst_ = 0, worst_got_ = 0, worst_want_ = 0;
  size_t count_ = 0, worst_index_ = 0;
};

}  // namespace vkf::ref
