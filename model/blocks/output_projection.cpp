#include "model/blocks/output_projection.h"

#include "engine/ops/matmul.h"

namespace vkf::model {

OutputProjection::OutputProjection(const ParamSource& p)
    : embed(p.param("embed.weight")),
      dembed(p.grad("embed.weight")),
      d_(uint32_t(p.config().d_model)),
      vocab_(uint32_t(p.config().vocab_size)) {}

OutputProjection::Saved OutputProjection::forward(const Forward& f, const BufferRef& y,
                                                  const BufferRef& logits, uint32_t rows) const {
  ops::MatmulArgs proj;
  proj.a = y;
  proj.b = embed;
  proj.c = logits;
  proj.m = rows;
  proj.n = vocab_;
  proj.k = d_;
  proj.trans_b = true;
  proj.dtype = f.dtype();
  proj.workspace = f.split_k_part(0);
  ops::matmul(f.dev, f.rec, proj);
  return {y, rows};
}

void OutputProjection::backward(const Backward& b, const Saved& s, const BufferRef& dlogits,
                                const BufferRef& dy) const {
  ops::MatmulArgs gx;  // dy[rows, d] = dlogits[rows, vocab] E[vocab, d]
  gx.a = dlogits;
  gx.b = embed;
  gx.c = dy;
  gx.m = s.rows;
  gx.n = d_;
  gx.k = vocab_;
  gx.dtype = b.dtype;
  ops::matmul(b.dev, b.rec, gx);
  ops::MatmulArgs gw;  // dE[vocab, d] += dlogits^T[vocab, rows] y[rows, d]
  gw.a = dlogits;
  gw.trans_a = true;
  gw.b = s.y;
  gw.c = dembed;
  gw.m = vocab_;
  gw.n = d_;
  gw.k = s.rows;
  gw.beta = 1.0f;
  gw.dtype = b.dtype;
  gw.workspace = b.split_k;
  ops::matmul(b.dev, b.rec, gw);
}

}  // namespace vkf::model
