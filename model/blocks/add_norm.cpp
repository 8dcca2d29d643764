#include "model/blocks/add_norm.h"

#include "engine/ops/layer_norm.h"

namespace vkf::model {

AddNorm::AddNorm(const ParamSource& p, const std::string& norm)
    : gamma(p.param(norm + ".weight")),
      beta(p.param(norm + ".bias")),
      dgamma(p.grad(norm + ".weight")),
      dbeta(p.grad(norm + ".bias")),
      d_(uint32_t(p.config().d_model)),
      eps_(p.config().layer_norm_eps) {}

AddNorm::Saved AddNorm::forward(const Forward& f, const std::string& name, const BufferRef& x,
                                const BufferRef& s, const BufferRef& x_out, uint32_t rows,
                                uint32_t len, uint32_t dropout_tensor) const {
  Saved saved{f.act(name + ".h", uint64_t{rows} * d_),
              f.buf(name + ".mean", rows),
              f.buf(name + ".rstd", rows),
              rows,
              len,
              f.dropout,
              dropout_tensor,
              f.dtype()};
  ops::LayerNormForwardArgs a;
  a.dtype = saved.dtype;
  a.x = x;
  a.s = s;
  a.gamma = gamma;
  a.beta = beta;
  a.y = x_out;
  a.h = saved.h;
  a.mean = saved.mean;
  a.rstd = saved.rstd;
  a.step = f.scalars;
  a.rows = rows;
  a.d = d_;
  a.eps = eps_;
  a.dropout = f.dropout;
  a.tensor_id = dropout_tensor;
  a.batch_row_rows = len;
  ops::layer_norm_forward(f.dev, f.rec, a);
  return saved;
}

void AddNorm::backward(const Backward& b, const Saved& s, const BufferRef& dy, const BufferRef& dx,
                       const BufferRef& ds) const {
  ops::LayerNormBackwardArgs a;
  a.dtype = s.dtype;
  a.dy = dy;
  a.h = s.h;
  a.gamma = gamma;
  a.mean = s.mean;
  a.rstd = s.rstd;
  a.dx = dx;
  a.ds = ds;
  a.dgamma = dgamma;
  a.dbeta = dbeta;
  a.scratch = b.ln_scratch;
  a.step = b.scalars;
  a.rows = s.rows;
  a.d = d_;
  a.dropout = s.dropout;
  a.tensor_id = s.dropout_tensor;
  a.batch_row_rows = s.len;
  a.accumulate_params = true;
  ops::layer_norm_backward(b.dev, b.rec, a);
}

}  // namespace vkf::model
