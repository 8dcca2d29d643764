#pragma once
// The Transformer's parameters: names and shapes fixed by docs/design.md (PyTorch Linear
// layout, weight [out, in]), laid out in one flat fp32 buffer so gradients, Adam state and the
// all-reduce each see a single contiguous range. Offsets are aligned to 64 floats (256 bytes) so
// every tensor can be bound on its own.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"

namespace vkf::model {

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // in floats, into the flat buffer
  int64_t numel() const;
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& config);
  const std::vector<ParamInfo>& params() const { return params_; }
  const ParamInfo& at(const std::string& name) const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  uint64_t total_floats() const { return total_; }  // including alignment padding
  uint64_t parameter_count() const;                 // without padding

 private:
  void add(const std::string& name, std::vector<int64_t> shape);
  std::vector<ParamInfo> params_;
  std::map<std::string, size_t> index_;
  uint64_t total_ = 0;
};

// The offsets (in floats) where one layer's parameters end and the next one's begin: every
// encoder and decoder layer is one contiguous range, so is the rest (the embeddings). The backward
// finishes the layers one at a time, and the gradient exchange starts on each as it is done.
std::vector<uint64_t> layer_boundaries(const ParamLayout& layout);

// Xavier-uniform projections, zero biases, unit LayerNorm gains, normal(0, d_model^-0.5)
// embeddings, as the reference implementations (fairseq, tensor2tensor) do; deterministic in seed.
std::vector<float> init_parameters(const ParamLayout& layout, const ModelConfig& config,
                                   uint64_t seed);

}  // namespace vkf::model
