#pragma once
// Add & norm (post-LN): x_out = LayerNorm(x + dropout(s)), forward and backward.
#include <cstdint>
#include <string>

#include "model/blocks/block.h"

namespace vkf::model {

class AddNorm {
 public:
  // The `norm`.weight (gamma) and `norm`.bias (beta) parameters.
  AddNorm(const ParamSource& p, const std::string& norm);

  struct Saved {
    BufferRef h;     // x + dropout(s), [rows, d]
    BufferRef mean;  // [rows]
    BufferRef rstd;  // [rows]
    uint32_t rows = 0, len = 0;
    float dropout = 0;
    uint32_t dropout_tensor = 0;
    DType dtype = DType::f32;  // of h and of the activations (mean and rstd are fp32)
  };
  // The rows are sentences of `len` tokens (for the dropout mask of a share of a batch); h, mean
  // and rstd go to the pool under `name`.{h,mean,rstd}.
  Saved forward(const Forward& f, const std::string& name, const BufferRef& x, const BufferRef& s,
                const BufferRef& x_out, uint32_t rows, uint32_t len, uint32_t dropout_tensor) const;
  // dy: gradient of x_out. Writes the gradient w.r.t. x into dx and w.r.t. s into ds.
  void backward(const Backward& b, const Saved& s, const BufferRef& dy, const BufferRef& dx,
                const BufferRef& ds) const;

  BufferRef gamma, beta, dgamma, dbeta;

 private:
  uint32_t d_;
  float eps_;
};

}  // namespace vkf::model
