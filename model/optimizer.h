#pragma once
// The optimizer step, recorded once: global gradient norm (for clipping and the non-finite
// check), Adam with the paper's schedule computed on the device, then the gradients are zeroed
// for the next accumulation and, in fp16, the masters cast to the fp16 copies the model reads.
#include <memory>

#include "engine/device.h"
#include "engine/ops/adam.h"
#include "engine/recorder.h"
#include "model/device_params.h"

namespace vkf::model {

class Optimizer {
 public:
  Optimizer(Device& dev, DeviceParams& params, const BufferRef& step_scalars,
            const ops::AdamOptions& options);
  // Applies the accumulated gradients. Returns the gradient norm before scaling and whether it
  // was finite (a non-finite gradient leaves the parameters untouched).
  struct Result {
    double grad_norm = 0;
    bool finite = true;
  };
  Result step() {
    submit();
    return collect();
  }
  void submit();
  Result collect();

 private:
  Buffer partials_, norm_;
  std::unique_ptr<Sequence> seq_;
};

}  // namespace vkf::model
