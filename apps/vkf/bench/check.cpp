#include "apps/vkf/bench/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "apps/vkf/bench/context.h"
#include "reference/matmul.h"

namespace vkf::bench {

void set_check(Row& row, const std::vector<Comparison>& comparisons, const std::string& on) {
  row.check = Check::pass;
  std::string detail = on + ": ";
  for (size_t i = 0; i < comparisons.size(); ++i) {
    const Comparison& c = comparisons[i];
    detail += (i ? "; " : "") + c.describe();
    if (!c.ok() && row.check == Check::pass) {
      row.check = Check::fail;
      row.reason = "wrong result: " + c.describe();
    }
  }
  row.check_detail = detail;
}

std::vector<uint32_t> sample_indices(std::mt19937& rng, uint32_t n, uint32_t count) {
  std::set<uint32_t> s{0, n - 1};
  std::uniform_int_distribution<uint32_t> pick(0, n - 1);
  while (s.size() < std::min(count, n)) s.insert(pick(rng));
  return {s.begin(), s.end()};
}

void set_timing(Row& row, const Context& cx, const Timing& t, double amount,
                const std::string& unit, Basis basis, double flops) {
  row.timer = t.timestamps ? "timestamps" : "host";
  row.times_ms.clear();
  for (double s : t.seconds) row.times_ms.push_back(s * 1e3);
  const double seconds = t.median();
  row.time_ms = seconds * 1e3;
  row.unit = unit;
  const bool giga = unit == "GFLOP/s" || unit == "GB/s";
  row.rate = seconds > 0 ? amount / seconds * (giga ? 1e-9 : 1.0) : 0;
  const double gflops = unit == "GFLOP/s" ? row.rate : seconds > 0 ? flops / seconds * 1e-9 : 0;
  double peak = 0, rate = gflops;
  switch (basis) {
    case Basis::none:
      break;
    case Basis::fp32_fma:
      peak = cx.peak.fp32_gflops, row.peak_basis = "fp32 FMA";
      break;
    case Basis::fp16_fma:
      // Tensor-core rows against the tensor cores' own measured rate where the probe ran.
      if (cx.peak.coopmat_gflops)
        peak = *cx.peak.coopmat_gflops, row.peak_basis = "tensor cores";
      else if (cx.peak.fp16_gflops)
        peak = *cx.peak.fp16_gflops, row.peak_basis = "fp16 FMA";
      break;
    case Basis::copy:
      peak = cx.peak.copy_gbytes_s, rate = row.rate, row.peak_basis = "copy";
      break;
  }
  if (peak > 0 && rate > 0) row.peak_fraction = rate / peak;
}

}  // namespace vkf::bench
