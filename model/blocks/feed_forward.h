#pragma once
// The position-wise feed-forward network, fc2(relu(fc1(x))), forward and backward.
#include <cstdint>
#include <string>

#include "model/blocks/block.h"

namespace vkf::model {

class FeedForward {
 public:
  // The `prefix`.fc1 and `prefix`.fc2 parameters.
  FeedForward(const ParamSource& p, const std::string& prefix);

  struct Saved {
    BufferRef x;  // the input [rows, d]
    BufferRef h;  // relu(fc1(x)) [rows, d_ff]
    uint32_t rows = 0;
  };
  // s_out [rows, d] = fc2(relu(fc1(x))); the hidden activation goes to the pool as `name`.f.
  Saved forward(const Forward& f, const std::string& name, const BufferRef& x,
                const BufferRef& s_out, uint32_t rows) const;
  // ds_out: gradient of s_out; adds the gradient w.r.t. x into dx.
  void backward(const Backward& b, const Saved& s, const BufferRef& ds_out,
                const BufferRef& dx) const;

  Linear fc1, fc2;
};

}  // namespace vkf::model
