#include "model/device_params.h"

#include <algorithm>

#include "engine/error.h"
#include "engine/ops/adam.h"
#include "engine/ops/elementwise.h"
#include "engine/recorder.h"

namespace vkf::model {

DeviceParams::DeviceParams(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes,
                           Precision precision)
    : DeviceWeights(dev, config, max_chunk_bytes, precision, /*masters=*/true) {
  for (const DeviceWeights::Chunk& w : weights_) {
    Chunk c;
    c.first = w.first;
    c.floats = w.floats;
    c.params = w.params.ref();
    const uint64_t bytes = w.params.size();
    c.grads = dev.allocate(bytes, "gradients");
    c.m = dev.allocate(bytes, "Adam first moments");
    c.v = dev.allocate(bytes, "Adam second moments");
    if (precision == Precision::fp16)
      c.half_grads = dev.allocate(half_chunks()[chunks_.size()].params.size(), "fp16 gradients");
    chunks_.push_back(std::move(c));
  }
  zero_state();
}

BufferRef DeviceParams::grad(const std::string& name) const {
  if (param_dtype(name) == DType::f16) {
    const ParamInfo& p = layout_.at(name);
    const Chunk& c = chunks_[chunk_of(p.offset)];
    return c.half_grads.ref().slice((p.offset - c.first) * 2, static_cast<uint64_t>(p.numel()) * 2);
  }
  return master_grad(name);
}

uint64_t DeviceParams::state_bytes() const {
  uint64_t n = bytes();
  for (const Chunk& c : chunks_)
    n +=
        c.grads.size() + c.m.size() + c.v.size() + (c.half_grads.valid() ? c.half_grads.size() : 0);
  return n;
}

void DeviceParams::drain_half_grads(Recorder& rec, uint64_t first, uint64_t end) const {
  for (const Chunk& c : chunks_) {
    if (!c.half_grads.valid()) continue;
    const uint64_t lo = std::max(first, c.first), hi = std::min(end, c.first + c.floats);
    if (lo >= hi) continue;
    ops::drain_f16_into_f32(dev_, rec,
                            {.x = c.half_grads.ref().slice((lo - c.first) * 2, (hi - lo) * 2),
                             .y = c.grads.ref().slice((lo - c.first) * 4, (hi - lo) * 4),
                             .n = static_cast<uint32_t>(hi - lo)});
  }
}

BufferRef DeviceParams::master_grad(const std::string& name) const {
  const ParamInfo& p = layout_.at(name);
  const Chunk& c = chunks_[chunk_of(p.offset)];
  return c.grads.ref().slice((p.offset - c.first) * 4, static_cast<uint64_t>(p.numel()) * 4);
}

void DeviceParams::upload_flat(Buffer Chunk::*which, const std::vector<float>& flat,
                               const char* what) {
  check_flat(flat, what);
  for (const Chunk& c : chunks_)
    dev_.upload((c.*which).ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
}

std::vector<float> DeviceParams::download_flat(Buffer Chunk::*which) const {
  std::vector<float> flat(layout_.total_floats());
  for (const Chunk& c : chunks_)
    dev_.download((c.*which).ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
  return flat;
}

std::vector<float> DeviceParams::download_grads() const {
  return download_flat(&Chunk::grads);
}

void DeviceParams::upload_moments(const std::vector<float>& m, const std::vector<float>& v) {
  upload_flat(&Chunk::m, m, "Adam state");
  upload_flat(&Chunk::v, v, "Adam state");
}

std::vector<float> DeviceParams::download_m() const {
  return download_flat(&Chunk::m);
}

std::vector<float> DeviceParams::download_v() const {
  return download_flat(&Chunk::v);
}

void DeviceParams::zero_grads() {
  Recorder rec(dev_);
  for (const Chunk& c : chunks_) {
    rec.fill(c.grads, 0);
    if (c.half_grads.valid()) rec.fill(c.half_grads, 0);
  }
  rec.finish().run();
}

bool DeviceParams::all_finite(bool moments) const {
  std::vector<ops::GradSpan> spans;
  for (const Chunk& c : chunks_) {
    const auto n = static_cast<uint32_t>(c.floats);
    spans.push_back({c.params, n});
    if (moments) {
      spans.push_back({c.m.ref(), n});
      spans.push_back({c.v.ref(), n});
    }
  }
  return spans_finite(std::move(spans));
}

void DeviceParams::zero_state() {
  Recorder rec(dev_);
  for (const Chunk& c : chunks_) {
    rec.fill(c.grads, 0);
    if (c.half_grads.valid()) rec.fill(c.half_grads, 0);
    rec.fill(c.m, 0);
    rec.fill(c.v, 0);
  }
  rec.finish().run();
}

}  // namespace vkf::model
