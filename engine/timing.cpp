#include "engine/timing.h"

#include <algorithm>
#include <chrono>

namespace vkf {

bool timestamps_preferred(const DeviceInfo& info) {
  return !info.is_cpu() && info.timestamp_valid_bits != 0;
}

double timed_run(Sequence& seq) {
  const auto t0 = std::chrono::steady_clock::now();
  seq.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::vector<KernelTiming> kernels = seq.timings();
  if (kernels.empty()) return wall;
  double ms = 0;
  for (const KernelTiming& k : kernels) ms += k.milliseconds;
  return ms * 1e-3;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

double Timing::median() const {
  return vkf::median(seconds);
}

double Timing::best() const {
  return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
}

Timing time_runs(Sequence& seq, int repeat) {
  Timing t;
  for (int i = 0; i < std::max(repeat, 1); ++i) t.seconds.push_back(timed_run(seq));
  t.timestamps = !seq.timings().empty();
  return t;
}

}  // namespace vkf
