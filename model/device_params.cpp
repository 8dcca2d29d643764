#include "model/device_params.h"

#include <algorithm>
#include <cstring>

#include "engine/error.h"
#include "engine/ops/adam.h"
#include "engine/recorder.h"

namespace vkf::model {

namespace {

// The most bytes one buffer can hold and be bound whole.
uint64_t device_chunk_limit(const DeviceInfo& info) {
  uint64_t limit = info.max_storage_buffer_range;
  if (info.max_buffer_bytes) limit = std::min(limit, info.max_buffer_bytes);
  if (info.max_allocation_bytes) limit = std::min(limit, info.max_allocation_bytes);
  return limit;
}

}  // namespace

DeviceParams::DeviceParams(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes)
    : dev_(dev), config_(config), layout_(config) {
  const uint64_t limit_floats =
      (max_chunk_bytes ? max_chunk_bytes : device_chunk_limit(dev.info())) / 4;
  // Cut the flat range at tensor starts so that no chunk exceeds the limit.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [first, end)
  uint64_t first = 0;
  const auto& ps = layout_.params();
  for (size_t i = 0; i < ps.size(); ++i) {
    const uint64_t end = i + 1 < ps.size() ? ps[i + 1].offset : layout_.total_floats();
    if (end - ps[i].offset > limit_floats)
      throw OutOfMemoryError("parameter " + ps[i].name + " (" +
                             format_bytes((end - ps[i].offset) * 4) +
                             ") does not fit the largest buffer that " + dev.label() +
                             " can bind (" + format_bytes(limit_floats * 4) + ")");
    if (end - first > limit_floats) {
      ranges.emplace_back(first, ps[i].offset);
      first = ps[i].offset;
    }
  }
  ranges.emplace_back(first, layout_.total_floats());
  for (auto [begin, end] : ranges) {
    Chunk c;
    c.first = begin;
    c.floats = end - begin;
    const uint64_t bytes = std::max<uint64_t>(c.floats, 1) * 4;
    c.params = dev.allocate(bytes, "parameters");
    c.grads = dev.allocate(bytes, "gradients");
    c.m = dev.allocate(bytes, "Adam first moments");
    c.v = dev.allocate(bytes, "Adam second moments");
    chunks_.push_back(std::move(c));
  }
  zero_state();
}

BufferRef DeviceParams::slice(Buffer Chunk::*which, const std::string& name) const {
  const ParamInfo& p = layout_.at(name);
  auto it = std::upper_bound(chunks_.begin(), chunks_.end(), p.offset,
                             [](uint64_t off, const Chunk& c) { return off < c.first; });
  const Chunk& c = *(it - 1);
  return (c.*which).ref().slice((p.offset - c.first) * 4, static_cast<uint64_t>(p.numel()) * 4);
}

void DeviceParams::upload_flat(Buffer Chunk::*which, const std::vector<float>& flat,
                               const char* what) {
  if (flat.size() != layout_.total_floats())
    throw Error(std::string(what) + " upload: " + std::to_string(flat.size()) +
                " floats for a layout of " + std::to_string(layout_.total_floats()));
  for (const Chunk& c : chunks_)
    dev_.upload((c.*which).ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
}

std::vector<float> DeviceParams::download_flat(Buffer Chunk::*which) const {
  std::vector<float> flat(layout_.total_floats());
  for (const Chunk& c : chunks_)
    dev_.download((c.*which).ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
  return flat;
}

void DeviceParams::upload(const std::vector<float>& flat) {
  upload_flat(&Chunk::params, flat, "parameter");
}

std::vector<float> DeviceParams::download() const {
  return download_flat(&Chunk::params);
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
  for (const Chunk& c : chunks_) rec.fill(c.grads, 0);
  rec.finish().run();
}

bool DeviceParams::all_finite(bool moments) const {
  // The gradient-norm reduction flags any NaN/Inf element (by its exponent bits) and a sum of
  // squares that overflows: one pass over every buffer, on the device that holds them.
  ops::GradNormArgs args;
  for (const Chunk& c : chunks_) {
    const auto n = static_cast<uint32_t>(c.floats);
    args.grads.push_back({c.params.ref(), n});
    if (moments) {
      args.grads.push_back({c.m.ref(), n});
      args.grads.push_back({c.v.ref(), n});
    }
  }
  Buffer partials = dev_.allocate(ops::grad_norm_partials_bytes(args), "finite-check partials");
  Buffer result = dev_.allocate(sizeof(ops::GradNormResult), "finite check", MemoryKind::host);
  args.partials = partials;
  args.out = result;
  Recorder rec(dev_);
  ops::grad_norm(dev_, rec, args);
  rec.finish().run();
  ops::GradNormResult r;
  std::memcpy(&r, result.mapped(), sizeof r);
  return r.nonfinite == 0;
}

void DeviceParams::zero_state() {
  Recorder rec(dev_);
  for (const Chunk& c : chunks_) {
    rec.fill(c.grads, 0);
    rec.fill(c.m, 0);
    rec.fill(c.v, 0);
  }
  rec.finish().run();
}

}  // namespace vkf::model
