#include "model/device_weights.h"

#include <algorithm>
#include <cstring>

#include "engine/error.h"
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

DeviceWeights::DeviceWeights(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes)
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
    c.params = dev.allocate(std::max<uint64_t>(c.floats, 1) * 4, "parameters");
    weights_.push_back(std::move(c));
  }
}

DeviceWeights::~DeviceWeights() = default;

size_t DeviceWeights::chunk_of(uint64_t offset) const {
  auto it = std::upper_bound(weights_.begin(), weights_.end(), offset,
                             [](uint64_t off, const Chunk& c) { return off < c.first; });
  return size_t(it - weights_.begin()) - 1;
}

BufferRef DeviceWeights::param(const std::string& name) const {
  const ParamInfo& p = layout_.at(name);
  const Chunk& c = weights_[chunk_of(p.offset)];
  return c.params.ref().slice((p.offset - c.first) * 4, static_cast<uint64_t>(p.numel()) * 4);
}

uint64_t DeviceWeights::bytes() const {
  uint64_t n = 0;
  for (const Chunk& c : weights_) n += c.params.size();
  return n;
}

void DeviceWeights::check_flat(const std::vector<float>& flat, const char* what) const {
  if (flat.size() != layout_.total_floats())
    throw Error(std::string(what) + " upload: " + std::to_string(flat.size()) +
                " floats for a layout of " + std::to_string(layout_.total_floats()));
}

void DeviceWeights::upload(const std::vector<float>& flat) {
  check_flat(flat, "parameter");
  for (const Chunk& c : weights_)
    dev_.upload(c.params.ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
}

void DeviceWeights::upload_checked(const std::vector<float>& flat, const std::string& source) {
  upload(flat);
  if (!all_finite())
    throw Error(source +
                " holds NaN, Inf or absurdly large weights: a corrupt file or a diverged run, "
                "whose outputs would be garbage; use an earlier checkpoint");
}

bool DeviceWeights::all_finite() const {
  std::vector<ops::GradSpan> spans;
  for (const Chunk& c : weights_)
    spans.push_back({c.params.ref(), static_cast<uint32_t>(c.floats)});
  return spans_finite(std::move(spans));
}

bool DeviceWeights::spans_finite(std::vector<ops::GradSpan> spans) const {
  // The gradient-norm reduction flags any NaN/Inf element (by its exponent bits) and a sum of
  // squares that overflows: one pass over every buffer, on the device that holds them.
  ops::GradNormArgs args;
  args.grads = std::move(spans);
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

std::vector<float> DeviceWeights::download() const {
  std::vector<float> flat(layout_.total_floats());
  for (const Chunk& c : weights_)
    dev_.download(c.params.ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
  return flat;
}

}  // namespace vkf::model
