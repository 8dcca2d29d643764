#pragma once
// Sums one flat fp32 buffer across the replicas of a data-parallel run, in place: every replica
// ends with the sum. Device buffers go through host-visible staging, bucket by bucket:
//   1. each device copies the bucket into its staging buffer (download);
//   2. reduce-scatter: the bucket is cut into one shard per device, and one host thread per
//      device sums its shard over every staging buffer in ring order (from the next device
//      round to itself, the order a ring reduce-scatter adds in), so every run gives the same
//      bits; with a ProcessGroup the result is then summed across processes (MPI);
//   3. all-gather: each thread copies the summed bucket into its device's staging buffer, and
//      the device copies it back (upload).
// All staging lives in one host memory, so a hop-by-hop ring would only copy the shards N-1
// times more; the shard-per-device split keeps the ring's balance of work without the hops.
//
// Two paths for the staging. shared (where every device has VK_EXT_external_memory_host): one
// host allocation imported into every device; each device downloads into its own region, the sum
// lands in the first region, and every device uploads from there, so the all-gather copies
// nothing. staged (any device): a host-visible buffer per device, and the all-gather copies the
// sum into each of them.
//
// Two ways to drive it. all_reduce() does every bucket after the caller's work has finished.
// To overlap the exchange with the backward pass, the caller instead queues download(device, b)
// right behind the work that completes bucket b on that device, calls reduce(b) for every bucket
// (same order on every process) while later work runs, and finish() at the end.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "engine/device.h"
#include "engine/exchange/process_group.h"
#include "engine/exchange/shared_host_memory.h"
#include "engine/recorder.h"

namespace vkf {

enum class ExchangePath { automatic, staged, shared };

struct ExchangeStats {
  uint64_t bytes = 0;  // device<->host bytes moved, all devices, last round
  double seconds = 0;  // wall time of the last round, first call to finish()
};

class GradientExchange {
 public:
  // `buffers[i]` lives on `devices[i]`; all hold `floats` elements. `group` may be null. Buckets
  // hold at most `bucket_floats` and also end at every offset in `boundaries` (e.g. where one
  // layer's gradients end and the next one's begin), so each can go as soon as its layer is done.
  GradientExchange(const std::vector<Device*>& devices, const std::vector<BufferRef>& buffers,
                   uint64_t floats, ProcessGroup* group = nullptr,
                   uint64_t bucket_floats = uint64_t(1) << 22,
                   const std::vector<uint64_t>& boundaries = {},
                   ExchangePath path = ExchangePath::automatic);
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  // Every buffer becomes the sum over all buffers (and processes). Throws DeviceLostError naming
  // the device when one is lost.
  void all_reduce();

  // The overlapped round: each bucket downloaded once from every device, then reduced, in any
  // order of buckets but the same on every process; finish() waits for every upload.
  void download(size_t device, size_t bucket);
  bool downloaded(size_t bucket) const;  // non-blocking: every device's copy has landed
  void reduce(size_t bucket);
  void finish();

  const ExchangeStats& stats() const { return stats_; }
  size_t buckets() const { return bucket_offsets_.size(); }
  // [first, end) in floats.
  std::pair<uint64_t, uint64_t> bucket_range(size_t b) const {
    return {bucket_offsets_[b], bucket_offsets_[b] + bucket_sizes_[b]};
  }
  bool active() const { return !(devices_.size() == 1 && !group_); }
  ExchangePath path() const { return shared_ ? ExchangePath::shared : ExchangePath::staged; }

 private:
  struct PerDevice {
    Device* device;
    Buffer staging;                  // staged path: host-visible, `floats` elements
    BufferRef host;                  // where this device's copy lands (staging or its region)
    std::vector<Sequence> down, up;  // per bucket
  };
  void start_round();
  void sum_shard(size_t shard, uint64_t first, uint64_t count);
  uint64_t floats_;
  ProcessGroup* group_;
  std::vector<uint64_t> bucket_offsets_, bucket_sizes_;  // in floats
  std::unique_ptr<SharedHostMemory> shared_;             // shared path
  std::vector<PerDevice> devices_;
  ExchangeStats stats_;
  std::vector<size_t> queued_;  // per bucket: downloads queued this round
  bool in_round_ = false;
  double round_start_ = 0;
};

}  // namespace vkf
