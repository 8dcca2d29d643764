#include "reference/comparison.h"

#include <cmath>
#include <cstdio>

namespace vkf::ref {

void Comparison::add(double got, double want, double scale, double atol, double rtol) {
  // Equal passes whatever the tolerance (0 / 0 where atol is 0 and want is 0).
  double r = got == want ? 0.0 : std::fabs(got - want) / (atol + rtol * std::fabs(scale));
  if (!std::isfinite(got) || std::isnan(r)) r = INFINITY;
  note(r, got, want);
}

void Comparison::add_exact(bool same, double got, double want) {
  note(same ? 0.0 : INFINITY, got, want);
}

void Comparison::note(double r, double got, double want) {
  if (count_ == 0 || r > worst_) {
    worst_ = r;
    worst_index_ = count_;
    worst_got_ = got;
    worst_want_ = want;
  }
  if (!(r <= 1.0)) ok_ = false;
  ++count_;
}

void Comparison::add_all(const std::vector<float>& got, const std::vector<double>& want,
                         double atol, double rtol) {
  if (got.size() != want.size()) {
    ok_ = false;
    worst_ = INFINITY;
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) add(got[i], want[i], want[i], atol, rtol);
}

std::string Comparison::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%zu values of %s, worst %.3g of the tolerance (got %.7g, want %.7g)", count_,
                what_.c_str(), worst_, worst_got_, worst_want_);
  return buf;
}

}  // namespace vkf::ref
