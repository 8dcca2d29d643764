#include "model/blocks/feed_forward.h"

#include "engine/ops/activation.h"

namespace vkf::model {

FeedForward::FeedForward(const ParamSource& p, const std::string& prefix) {
  const uint32_t d = uint32_t(p.config().d_model), dff = uint32_t(p.config().d_ff);
  fc1 = p.linear(prefix + ".fc1", d, dff);
  fc2 = p.linear(prefix + ".fc2", dff, d);
}

FeedForward::Saved FeedForward::forward(const Forward& f, const std::string& name,
                                        const BufferRef& x, const BufferRef& s_out,
                                        uint32_t rows) const {
  Saved s{x, f.act(name + ".f", uint64_t{rows} * fc1.out), rows};
  linear_forward(f, fc1, x, s.h, rows, true);
  linear_forward(f, fc2, s.h, s_out, rows);
  return s;
}

void FeedForward::backward(const Backward& b, const Saved& s, const BufferRef& ds_out,
                           const BufferRef& dx) const {
  const BufferRef dh = b.part(b.d_ff, uint64_t{s.rows} * fc1.out);
  linear_backward(b, fc2, s.h, ds_out, dh, false, s.rows);
  ops::relu_backward(b.dev, b.rec, s.h, dh, s.rows * fc1.out, b.dtype);
  linear_backward(b, fc1, s.x, dh, dx, true, s.rows);
}

}  // namespace vkf::model
