#include "model/device_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/error.h"
#include "engine/ops/elementwise.h"
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

// The largest finite fp16 value: a weight above it would be stored as Inf.
constexpr float k_f16_max = 65504.0f;

// A buffer of `halves` fp16 values, rounded up to whole 4-byte words.
uint64_t half_bytes(uint64_t halves) {
  return (std::max<uint64_t>(halves, 2) * 2 + 3) / 4 * 4;
}

}  // namespace

bool DeviceWeights::half_in_fp16(const std::string& name) {
  return name.find("norm.") == std::string::npos && name != "pos_embed.weight";
}

DeviceWeights::DeviceWeights(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes,
                             Precision precision)
    : DeviceWeights(dev, config, max_chunk_bytes, precision, /*masters=*/false) {}

DeviceWeights::DeviceWeights(Device& dev, const ModelConfig& config, uint64_t max_chunk_bytes,
                             Precision precision, bool masters)
    : dev_(dev), config_(config), layout_(config), precision_(precision) {
  const bool half = precision == Precision::fp16;
  if (half) {
    if (!dev.info().storage16)
      throw Error("fp16 weights need 16-bit storage buffers, which " + dev.label() +
                  " does not have; use fp32");
    if (dev.info().min_storage_offset_alignment > 128)
      throw Error("fp16 weights start at multiples of 128 bytes, but " + dev.label() +
                  " binds storage buffers at multiples of " +
                  std::to_string(dev.info().min_storage_offset_alignment) + " only; use fp32");
  }
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
    if (!half || masters) {
      c.params = dev.allocate(std::max<uint64_t>(c.floats, 1) * 4, "parameters");
      weights_.push_back(std::move(c));
    }
    if (half) {
      Chunk h;
      h.first = begin;
      h.floats = end - begin;
      h.params = dev.allocate(half_bytes(h.floats), "fp16 parameters");
      halves_.push_back(std::move(h));
    }
  }
  if (half && !masters)
    for (const ParamInfo& p : ps)
      if (!half_in_fp16(p.name))
        kept_.emplace(p.name, dev.allocate(uint64_t(p.numel()) * 4, p.name));
}

DeviceWeights::~DeviceWeights() = default;

size_t DeviceWeights::chunk_of(uint64_t offset) const {
  const std::vector<Chunk>& chunks = weights_.empty() ? halves_ : weights_;
  auto it = std::upper_bound(chunks.begin(), chunks.end(), offset,
                             [](uint64_t off, const Chunk& c) { return off < c.first; });
  return size_t(it - chunks.begin()) - 1;
}

DType DeviceWeights::param_dtype(const std::string& name) const {
  return precision_ == Precision::fp16 && half_in_fp16(name) ? DType::f16 : DType::f32;
}

BufferRef DeviceWeights::param(const std::string& name) const {
  const ParamInfo& p = layout_.at(name);
  const uint64_t n = static_cast<uint64_t>(p.numel());
  if (param_dtype(name) == DType::f16) {
    const Chunk& c = halves_[chunk_of(p.offset)];
    return c.params.ref().slice((p.offset - c.first) * 2, n * 2);
  }
  if (weights_.empty()) return kept_.at(name).ref();
  const Chunk& c = weights_[chunk_of(p.offset)];
  return c.params.ref().slice((p.offset - c.first) * 4, n * 4);
}

uint64_t DeviceWeights::bytes() const {
  uint64_t n = 0;
  for (const Chunk& c : weights_) n += c.params.size();
  for (const Chunk& c : halves_) n += c.params.size();
  for (const auto& [name, b] : kept_) n += b.size();
  return n;
}

void DeviceWeights::check_flat(const std::vector<float>& flat, const char* what) const {
  if (flat.size() != layout_.total_floats())
    throw Error(std::string(what) + " upload: " + std::to_string(flat.size()) +
                " floats for a layout of " + std::to_string(layout_.total_floats()));
}

void DeviceWeights::refresh_halves(Recorder& rec) const {
  if (weights_.empty()) return;
  for (size_t i = 0; i < halves_.size(); ++i)
    ops::cast_f32_to_f16(dev_, rec,
                         {.x = weights_[i].params.ref(),
                          .y = halves_[i].params.ref(),
                          .n = static_cast<uint32_t>(halves_[i].floats)});
}

void DeviceWeights::upload(const std::vector<float>& flat) {
  check_flat(flat, "parameter");
  for (const Chunk& c : weights_)
    dev_.upload(c.params.ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
  if (halves_.empty()) return;
  if (!weights_.empty()) {
    Recorder rec(dev_);
    refresh_halves(rec);
    rec.finish().run();
    return;
  }
  // Inference: each chunk goes up in fp32 to a temporary and is cast on the device, rounding as
  // the training step's casts do; one chunk at a time, so the temporary is one chunk.
  for (const Chunk& c : halves_) {
    Buffer f32 = dev_.allocate(std::max<uint64_t>(c.floats, 1) * 4, "fp32 staging of weights");
    dev_.upload(f32.ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
    Recorder rec(dev_);
    ops::cast_f32_to_f16(
        dev_, rec, {.x = f32.ref(), .y = c.params.ref(), .n = static_cast<uint32_t>(c.floats)});
    rec.finish().run();
  }
  for (auto& [name, b] : kept_) {
    const ParamInfo& p = layout_.at(name);
    dev_.upload(b.ref(), flat.data() + p.offset, uint64_t(p.numel()) * 4);
  }
}

void DeviceWeights::upload_checked(const std::vector<float>& flat, const std::string& source) {
  check_flat(flat, "parameter");
  const Error corrupt(source +
                      " holds NaN, Inf or absurdly large weights: a corrupt file or a diverged "
                      "run, whose outputs would be garbage; use an earlier checkpoint");
  if (precision_ == Precision::fp16)
    for (const ParamInfo& p : layout_.params()) {
      if (!half_in_fp16(p.name)) continue;
      for (int64_t i = 0; i < p.numel(); ++i) {
        const float w = flat[p.offset + uint64_t(i)];
        // Corruption first (what all_finite refuses: its square overflows), so that a corrupt
        // file is not answered with advice to load it in fp32.
        if (!std::isfinite(w * w)) throw corrupt;
        if (std::fabs(w) > k_f16_max)
          throw Error(source + ": weight " + p.name + "[" + std::to_string(i) + "] = " +
                      std::to_string(w) + " is beyond fp16's range (65504); use --precision fp32");
      }
    }
  upload(flat);
  if (!all_finite()) throw corrupt;
}

template <typename F>
void DeviceWeights::each_half_as_f32(F&& use) const {
  for (const Chunk& c : halves_) {
    Buffer f32 = dev_.allocate(std::max<uint64_t>(c.floats, 1) * 4, "fp32 view of fp16 weights");
    Recorder rec(dev_);
    ops::cast_f16_to_f32(
        dev_, rec, {.x = c.params.ref(), .y = f32.ref(), .n = static_cast<uint32_t>(c.floats)});
    rec.finish().run();
    use(c, f32);
  }
}

bool DeviceWeights::all_finite() const {
  std::vector<ops::GradSpan> spans;
  for (const Chunk& c : weights_)
    spans.push_back({c.params.ref(), static_cast<uint32_t>(c.floats)});
  for (const auto& [name, b] : kept_)
    spans.push_back({b.ref(), static_cast<uint32_t>(layout_.at(name).numel())});
  bool finite = spans.empty() || spans_finite(std::move(spans));
  // Without masters the fp16 copies are all there is: check them as the device reads them.
  if (weights_.empty())
    each_half_as_f32([&](const Chunk& c, const Buffer& f32) {
      finite = finite && spans_finite({{f32.ref(), static_cast<uint32_t>(c.floats)}});
    });
  return finite;
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
  if (!weights_.empty()) return flat;
  each_half_as_f32([&](const Chunk& c, const Buffer& f32) {
    dev_.download(f32.ref().slice(0, c.floats * 4), flat.data() + c.first, c.floats * 4);
  });
  for (const auto& [name, b] : kept_) {
    const ParamInfo& p = layout_.at(name);
    dev_.download(b.ref(), flat.data() + p.offset, uint64_t(p.numel()) * 4);
  }
  return flat;
}

}  // namespace vkf::model
