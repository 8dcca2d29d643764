#pragma once
// Sums one flat fp32 buffer across the replicas of a data-parallel run, in place: every replica
// ends with the sum. Device buffers go through host-visible staging (each device copies its
// buffer there; the host adds them in a fixed order, so every run gives the same bits; then
// each device copies the sum back), bucket by bucket so that the copies of one bucket overlap
// the host's sum of the previous one. With a ProcessGroup the in-process sum is then summed
// across processes (MPI) before it goes back.
#include <cstdint>
#include <vector>

#include "engine/device.h"
#include "engine/exchange/process_group.h"
#include "engine/recorder.h"

namespace vkf {

struct ExchangeStats {
  uint64_t bytes = 0;  // device<->host bytes moved, all devices, last call
  double seconds = 0;  // wall time of the last call
};

class GradientExchange {
 public:
  // `buffers[i]` lives on `devices[i]`; all hold `floats` elements. `group` may be null.
  GradientExchange(const std::vector<Device*>& devices, const std::vector<BufferRef>& buffers,
                   uint64_t floats, ProcessGroup* group = nullptr,
                   uint64_t bucket_floats = uint64_t(1) << 22);
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  // Every buffer becomes the sum over all buffers (and processes). Throws DeviceLostError naming
  // the device when one is lost.
  void all_reduce();
  const ExchangeStats& stats() const { return stats_; }
  size_t buckets() const { return bucket_offsets_.size(); }

 private:
  struct PerDevice {
    Device* device;
    Buffer staging;                  // host-visible, `floats` elements
    std::vector<Sequence> down, up;  // per bucket
  };
  uint64_t floats_;
  ProcessGroup* group_;
  std::vector<uint64_t> bucket_offsets_, bucket_sizes_;  // in floats
  std::vector<PerDevice> devices_;
  ExchangeStats stats_;
};

}  // namespace vkf
