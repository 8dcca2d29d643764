#include "model/optimizer.h"

#include <cstring>

namespace vkf::model {

Optimizer::Optimizer(Device& dev, DeviceParams& params, const BufferRef& step_scalars,
                     const ops::AdamOptions& options) {
  // One norm over every chunk's gradients; then Adam chunk by chunk with that norm.
  ops::GradNormArgs norm_args;
  for (const auto& c : params.chunks())
    norm_args.grads.push_back({c.grads.ref(), static_cast<uint32_t>(c.floats)});
  partials_ = dev.allocate(ops::grad_norm_partials_bytes(norm_args), "gradient-norm partials");
  norm_ = dev.allocate(sizeof(ops::GradNormResult), "gradient norm", MemoryKind::host);
  norm_args.partials = partials_;
  norm_args.out = norm_;

  Recorder rec(dev);
  ops::grad_norm(dev, rec, norm_args);
  for (const auto& c : params.chunks()) {
    ops::AdamArgs adam;
    adam.params = c.params;
    adam.grads = c.grads;
    adam.m = c.m;
    adam.v = c.v;
    adam.step = step_scalars;
    adam.grad_norm = norm_;
    adam.n = static_cast<uint32_t>(c.floats);
    adam.options = options;
    ops::adam(dev, rec, adam);
  }
  for (const auto& c : params.chunks()) rec.fill(c.grads, 0);
  // fp16: the model reads fp16 copies of the masters Adam just updated (unchanged when the step
  // was skipped for a non-finite gradient).
  params.refresh_halves(rec);
  seq_ = std::make_unique<Sequence>(rec.finish());
}

void Optimizer::submit() {
  seq_->submit();
}

Optimizer::Result Optimizer::collect() {
  seq_->wait();
  ops::GradNormResult r;
  std::memcpy(&r, norm_.mapped(), sizeof r);
  return {r.norm, r.nonfinite == 0};
}

}  // namespace vkf::model
