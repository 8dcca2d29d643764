#pragma once
// Parameters, gradients and Adam state of one replica, each one flat device buffer in
// ParamLayout order, so the optimizer and the all-reduce see single ranges.
#include <string>
#include <vector>

#include "engine/device.h"
#include "model/config.h"
#include "model/params.h"

namespace vkf::model {

class DeviceParams {
 public:
  DeviceParams(Device& dev, const ModelConfig& config);

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  BufferRef param(const std::string& name) const { return slice(params_, name); }
  BufferRef grad(const std::string& name) const { return slice(grads_, name); }
  const Buffer& params() const { return params_; }
  const Buffer& grads() const { return grads_; }
  const Buffer& adam_m() const { return m_; }
  const Buffer& adam_v() const { return v_; }

  void upload(const std::vector<float>& flat);
  std::vector<float> download() const;
  // Adam's first and second moments, for the optimizer-state file that makes a run resumable.
  void upload_moments(const std::vector<float>& m, const std::vector<float>& v);
  std::vector<float> download_m() const;
  std::vector<float> download_v() const;
  void zero_state();  // gradients and Adam moments

 private:
  BufferRef slice(const Buffer& b, const std::string& name) const;
  Device& dev_;
  ModelConfig config_;
  ParamLayout layout_;
  Buffer params_, grads_, m_, v_;
};

}  // namespace vkf::model
