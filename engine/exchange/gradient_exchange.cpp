#include "engine/exchange/gradient_exchange.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "engine/error.h"

namespace vkf {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Below this many floats a bucket is summed on the calling thread: starting threads would cost
// more than the sum. The bits are the same either way (they depend on the shards, not on who
// sums them).
constexpr uint64_t k_threaded_floats = uint64_t(1) << 16;

}  // namespace

GradientExchange::GradientExchange(const std::vector<Device*>& devices,
                                   const std::vector<BufferRef>& buffers, uint64_t floats,
                                   ProcessGroup* group, uint64_t bucket_floats,
                                   const std::vector<uint64_t>& boundaries, ExchangePath path)
    : floats_(floats), group_(group) {
  if (devices.empty() || devices.size() != buffers.size())
    throw Error("GradientExchange: one buffer per device is needed");
  if (bucket_floats == 0) throw Error("GradientExchange: empty buckets");
  std::set<uint64_t> ends(boundaries.begin(), boundaries.end());
  ends.insert(floats);
  uint64_t at = 0;
  for (uint64_t end : ends) {
    if (end > floats) throw Error("GradientExchange: a bucket boundary lies past the buffer");
    for (; at < end; at += std::min(bucket_floats, end - at)) {
      bucket_offsets_.push_back(at);
      bucket_sizes_.push_back(std::min(bucket_floats, end - at));
    }
  }
  if (path == ExchangePath::shared && !SharedHostMemory::supported(devices))
    throw Error(
        "GradientExchange: the shared path needs VK_EXT_external_memory_host on every "
        "device");
  // One region a device, 256-byte aligned.
  const uint64_t region = (std::max<uint64_t>(floats, 1) * 4 + 255) / 256 * 256;
  if (path == ExchangePath::shared) {
    shared_ = std::make_unique<SharedHostMemory>(devices, region * devices.size());
  } else if (path == ExchangePath::automatic && devices.size() > 1 &&
             SharedHostMemory::supported(devices)) {
    // A driver may still refuse the import (memory types, limits): the staged path then serves.
    try {
      shared_ = std::make_unique<SharedHostMemory>(devices, region * devices.size());
    } catch (const Error&) {
      shared_.reset();
    }
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (buffers[i].size < floats * 4)
      throw Error("GradientExchange: buffer " + std::to_string(i) + " is smaller than " +
                  std::to_string(floats) + " floats");
    PerDevice d{devices[i], {}, {}, {}, {}};
    if (shared_) {
      d.host = shared_->on_device(i).slice(i * region, region);
    } else {
      d.staging = devices[i]->allocate(region, "gradient exchange staging", MemoryKind::host);
      d.host = d.staging.ref();
    }
    // Shared path: the sum is in the first device's region, and every device reads it there.
    const BufferRef sum = shared_ ? shared_->on_device(i).slice(0, region) : d.host;
    for (size_t b = 0; b < bucket_offsets_.size(); ++b) {
      const uint64_t off = bucket_offsets_[b] * 4, bytes = bucket_sizes_[b] * 4;
      const BufferRef dev_part = buffers[i].slice(off, bytes);
      Recorder down(*devices[i]);
      down.copy(dev_part, d.host.slice(off, bytes));
      d.down.push_back(down.finish());
      Recorder up(*devices[i]);
      up.copy(sum.slice(off, bytes), dev_part);
      d.up.push_back(up.finish());
    }
    devices_.push_back(std::move(d));
  }
  queued_.assign(bucket_offsets_.size(), 0);
}

void GradientExchange::start_round() {
  if (in_round_) return;
  in_round_ = true;
  round_start_ = now_seconds();
}

void GradientExchange::download(size_t device, size_t bucket) {
  if (!active()) return;
  start_round();
  devices_.at(device).down.at(bucket).submit();
  ++queued_[bucket];
}

bool GradientExchange::downloaded(size_t bucket) const {
  for (const auto& d : devices_)
    if (!d.down.at(bucket).ready()) return false;
  return true;
}

// Shard `shard` of a bucket: summed over the devices in ring order (shard + 1, ..., shard), block
// by block through a small buffer so that the inputs are read before the first staging buffer,
// which gets the sum, is written.
void GradientExchange::sum_shard(size_t shard, uint64_t first, uint64_t count) {
  const size_t n = devices_.size();
  auto staging = [&](size_t i) { return reinterpret_cast<float*>(devices_[i].host.mapped); };
  std::array<float, 2048> acc;
  for (uint64_t at = first; at < first + count; at += acc.size()) {
    const uint64_t m = std::min<uint64_t>(acc.size(), first + count - at);
    const float* x = staging((shard + 1) % n) + at;
    std::copy(x, x + m, acc.begin());
    for (size_t j = 2; j <= n; ++j) {
      const float* y = staging((shard + j) % n) + at;
      for (uint64_t e = 0; e < m; ++e) acc[e] += y[e];
    }
    std::copy(acc.begin(), acc.begin() + ptrdiff_t(m), staging(0) + at);
  }
}

void GradientExchange::reduce(size_t b) {
  if (!active()) return;
  start_round();
  if (queued_.at(b) != devices_.size())
    throw Error("GradientExchange: bucket " + std::to_string(b) + " reduced after " +
                std::to_string(queued_[b]) + " of " + std::to_string(devices_.size()) +
                " downloads");
  queued_[b] = 0;
  for (auto& d : devices_) d.down[b].wait();
  const size_t n = devices_.size();
  const uint64_t first = bucket_offsets_[b], count = bucket_sizes_[b];
  // One shard per device, 16-float aligned; the split depends only on the bucket and the device
  // count, so the sum's bits do too.
  const uint64_t shard_floats = ((count + n - 1) / n + 15) / 16 * 16;
  auto shard_of = [&](size_t s) {
    const uint64_t lo = std::min(count, s * shard_floats);
    return std::pair<uint64_t, uint64_t>{first + lo, std::min(count, lo + shard_floats) - lo};
  };
  auto each_device = [&](auto&& work) {
    if (n == 1 || count < k_threaded_floats) {
      for (size_t s = 0; s < n; ++s) work(s);
      return;
    }
    std::vector<std::thread> threads;
    for (size_t s = 1; s < n; ++s) threads.emplace_back(work, s);
    work(size_t(0));
    for (auto& t : threads) t.join();
  };
  if (n > 1)
    each_device([&](size_t s) {
      auto [lo, m] = shard_of(s);
      if (m > 0) sum_shard(s, lo, m);
    });
  float* sum = reinterpret_cast<float*>(devices_[0].host.mapped) + first;
  if (group_) group_->sum(sum, count);
  if (!shared_)
    each_device([&](size_t i) {  // all-gather, each device's thread into its own staging
      if (i > 0)
        std::memcpy(reinterpret_cast<float*>(devices_[i].host.mapped) + first, sum, count * 4);
    });
  for (auto& d : devices_) d.up[b].submit();
}

void GradientExchange::finish() {
  if (active()) {
    start_round();
    for (auto& d : devices_)
      for (auto& s : d.up) s.wait();
  }
  stats_.bytes = active() ? 2 * floats_ * 4 * devices_.size() : 0;
  stats_.seconds = in_round_ ? now_seconds() - round_start_ : 0;
  in_round_ = false;
}

void GradientExchange::all_reduce() {
  start_round();
  if (active()) {
    for (size_t i = 0; i < devices_.size(); ++i)
      for (size_t b = 0; b < buckets(); ++b) download(i, b);
    for (size_t b = 0; b < buckets(); ++b) reduce(b);
  }
  finish();
}

}  // namespace vkf
