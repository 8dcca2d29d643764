#include "model/optimizer.h"

#include <cstring>

namespace vkf::model {

Optimizer::Optimizer(Device& dev, DeviceParams& params, const BufferRef& step_scalars,
                     const ops::AdamOptions& options)
    : dev_(dev) {
  const auto n = static_cast<uint32_t>(params.layout().total_floats());
  ops::GradNormArgs norm_args;
  norm_args.grads = {{params.grads(), n}};
  partials_ = dev.allocate(ops::grad_norm_partials_bytes(norm_args), "gradient-norm partials");
  norm_ = dev.allocate(sizeof(ops::GradNormResult), "gradient norm", MemoryKind::host);
  norm_args.partials = partials_;
  norm_args.out = norm_;

  Recorder rec(dev);
  ops::grad_norm(dev, rec, norm_args);
  ops::AdamArgs adam;
  adam.params = params.params();
  adam.grads = params.grads();
  adam.m = params.adam_m();
  adam.v = params.adam_v();
  adam.step = step_scalars;
  adam.grad_norm = norm_;
  adam.n = n;
  adam.options = options;
  ops::adam(dev, rec, adam);
  rec.fill(params.grads(), 0);
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
