#include "engine/exchange/gradient_exchange.h"

#include <chrono>
#include <cstring>

#include "engine/error.h"

namespace vkf {

GradientExchange::GradientExchange(const std::vector<Device*>& devices,
                                   const std::vector<BufferRef>& buffers, uint64_t floats,
                                   ProcessGroup* group, uint64_t bucket_floats)
    : floats_(floats), group_(group) {
  if (devices.empty() || devices.size() != buffers.size())
    throw Error("GradientExchange: one buffer per device is needed");
  if (bucket_floats == 0) throw Error("GradientExchange: empty buckets");
  for (uint64_t off = 0; off < floats; off += bucket_floats) {
    bucket_offsets_.push_back(off);
    bucket_sizes_.push_back(std::min(bucket_floats, floats - off));
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (buffers[i].size < floats * 4)
      throw Error("GradientExchange: buffer " + std::to_string(i) + " is smaller than " +
                  std::to_string(floats) + " floats");
    PerDevice d{devices[i],
                devices[i]->allocate(std::max<uint64_t>(floats, 1) * 4, "gradient exchange staging",
                                     MemoryKind::host),
                {},
                {}};
    for (size_t b = 0; b < bucket_offsets_.size(); ++b) {
      const uint64_t off = bucket_offsets_[b] * 4, bytes = bucket_sizes_[b] * 4;
      const BufferRef dev_part = buffers[i].slice(off, bytes);
      const BufferRef host_part = d.staging.ref().slice(off, bytes);
      Recorder down(*devices[i]);
      down.copy(dev_part, host_part);
      d.down.push_back(down.finish());
      Recorder up(*devices[i]);
      up.copy(host_part, dev_part);
      d.up.push_back(up.finish());
    }
    devices_.push_back(std::move(d));
  }
}

void GradientExchange::all_reduce() {
  const auto start = std::chrono::steady_clock::now();
  const bool local_only = devices_.size() == 1 && !group_;
  if (!local_only) {
    for (auto& d : devices_)
      for (auto& s : d.down) s.submit();
    for (size_t b = 0; b < bucket_offsets_.size(); ++b) {
      for (auto& d : devices_) d.down[b].wait();
      // Sum into the first staging buffer in device order: the same bits every run.
      float* sum = reinterpret_cast<float*>(devices_[0].staging.mapped()) + bucket_offsets_[b];
      const uint64_t n = bucket_sizes_[b];
      for (size_t i = 1; i < devices_.size(); ++i) {
        const float* x =
            reinterpret_cast<const float*>(devices_[i].staging.mapped()) + bucket_offsets_[b];
        for (uint64_t j = 0; j < n; ++j) sum[j] += x[j];
      }
      if (group_) group_->sum(sum, n);
      for (size_t i = 1; i < devices_.size(); ++i)
        std::memcpy(reinterpret_cast<float*>(devices_[i].staging.mapped()) + bucket_offsets_[b],
                    sum, n * 4);
      for (auto& d : devices_) d.up[b].submit();
    }
    for (auto& d : devices_)
      for (auto& s : d.up) s.wait();
  }
  stats_.bytes = local_only ? 0 : 2 * floats_ * 4 * devices_.size();
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace vkf
