#pragma once
// /metrics for `vkf serve`, in the Prometheus text format (version 0.0.4): requests by endpoint
// and status, the request latency histogram, and the batching figures the service reports.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "apps/serve/service.h"

namespace vkf::serve {

class Metrics {
 public:
  // One answered request: its path, status and seconds from reading it to answering it.
  void record(const std::string& path, int status, double seconds);
  std::string render(const ServiceStats& stats, bool healthy) const;

  // Upper bounds of the latency buckets, in seconds (+Inf is implicit).
  static constexpr std::array<double, 12> k_buckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                       0.5,   1,    2.5,   5,    10,  30};

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::array<uint64_t, k_buckets.size()> latency_{};  // /translate only, non-cumulative
  uint64_t latency_count_ = 0;
  double latency_sum_ = 0;
};

}  // namespace vkf::serve
