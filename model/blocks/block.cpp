#include "model/blocks/block.h"

namespace vkf::model {

Linear ParamSource::linear(const std::string& prefix, uint32_t in, uint32_t out) const {
  Linear l = linear_of(weights, prefix, in, out);
  l.dweight = grad(prefix + ".weight");
  l.dbias = grad(prefix + ".bias");
  return l;
}

void linear_forward(const Forward& f, const Linear& l, const BufferRef& x, const BufferRef& y,
                    uint32_t rows, bool relu, uint32_t part) {
  linear_forward(f.dev, f.rec, l, x, y, rows, relu, f.split_k_part(part));
}

void linear_backward(const Backward& b, const Linear& l, const BufferRef& x, const BufferRef& dy,
                     const BufferRef& dx, bool accumulate_dx, uint32_t rows) {
  linear_backward(b.dev, b.rec, l, x, dy, dx, accumulate_dx, l.dweight, l.dbias,
                  b.part(b.ones, rows), rows, b.split_k);
}

}  // namespace vkf::model
