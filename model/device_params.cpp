#include "model/device_params.h"

#include "engine/error.h"
#include "engine/recorder.h"

namespace vkf::model {

DeviceParams::DeviceParams(Device& dev, const ModelConfig& config)
    : dev_(dev), config_(config), layout_(config) {
  const uint64_t bytes = layout_.total_floats() * 4;
  params_ = dev.allocate(bytes, "parameters");
  grads_ = dev.allocate(bytes, "gradients");
  m_ = dev.allocate(bytes, "Adam first moments");
  v_ = dev.allocate(bytes, "Adam second moments");
  zero_state();
}

BufferRef DeviceParams::slice(const Buffer& b, const std::string& name) const {
  const ParamInfo& p = layout_.at(name);
  return b.ref().slice(p.offset * 4, static_cast<uint64_t>(p.numel()) * 4);
}

void DeviceParams::upload(const std::vector<float>& flat) {
  if (flat.size() != layout_.total_floats())
    throw Error("parameter upload: " + std::to_string(flat.size()) + " floats for a layout of " +
                std::to_string(layout_.total_floats()));
  dev_.upload(params_, flat);
}

std::vector<float> DeviceParams::download() const {
  return dev_.download<float>(params_, layout_.total_floats());
}

void DeviceParams::upload_moments(const std::vector<float>& m, const std::vector<float>& v) {
  if (m.size() != layout_.total_floats() || v.size() != layout_.total_floats())
    throw Error("Adam state upload: " + std::to_string(m.size()) + "/" + std::to_string(v.size()) +
                " floats for a layout of " + std::to_string(layout_.total_floats()));
  dev_.upload(m_, m);
  dev_.upload(v_, v);
}

std::vector<float> DeviceParams::download_m() const {
  return dev_.download<float>(m_, layout_.total_floats());
}

std::vector<float> DeviceParams::download_v() const {
  return dev_.download<float>(v_, layout_.total_floats());
}

void DeviceParams::zero_state() {
  Recorder rec(dev_);
  rec.fill(grads_, 0);
  rec.fill(m_, 0);
  rec.fill(v_, 0);
  rec.finish().run();
}

}  // namespace vkf::model
