#pragma once
// The output projection with the shared embedding E [vocab, d]: logits = y E^T, forward and
// backward (dy = dlogits E, dE += dlogits^T y).
#include <cstdint>

#include "model/blocks/block.h"

namespace vkf::model {

class OutputProjection {
 public:
  explicit OutputProjection(const ParamSource& p);

  struct Saved {
    BufferRef y;  // the decoder's output [rows, d]
    uint32_t rows = 0;
  };
  // logits [rows, vocab] = y E^T.
  Saved forward(const Forward& f, const BufferRef& y, const BufferRef& logits, uint32_t rows) const;
  // Writes the gradient w.r.t. y into dy and adds E's into its gradient.
  void backward(const Backward& b, const Saved& s, const BufferRef& dlogits,
                const BufferRef& dy) const;

  BufferRef embed, dembed;

 private:
  uint32_t d_, vocab_;
};

}  // namespace vkf::model
