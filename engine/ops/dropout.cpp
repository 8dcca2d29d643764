#include "engine/ops/dropout.h"

#include <string>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/step_scalars.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_local = 256;  // invocations, each 4 elements

void run_dropout(Device& dev, Recorder& rec, const DropoutArgs& a, const char* op) {
  if (a.n == 0) throw Error(std::string(op) + ": n is 0");
  if (!a.x.valid() || !a.y.valid() || a.x.size < uint64_t{a.n} * 4 || a.y.size < uint64_t{a.n} * 4)
    throw Error(std::string(op) + ": x (" + std::to_string(a.x.size) + " bytes) or y (" +
                std::to_string(a.y.size) + " bytes) holds fewer than " + std::to_string(a.n) +
                " floats");
  if (a.x.overlaps(a.y)) throw Error(std::string(op) + ": x and y overlap");
  if (a.p < 0.0f || a.p >= 1.0f)
    throw Error(std::string(op) + ": p " + std::to_string(a.p) + " not in [0, 1)");
  const bool on = a.p > 0.0f;
  if (on && (!a.step.valid() || a.step.size < sizeof(StepScalars)))
    throw Error(std::string(op) + ": dropout needs the step-scalar buffer");
  struct {
    uint32_t n;
    float p;
    uint32_t tensor_id;
  } push{a.n, a.p, a.tensor_id};
  const Kernel& k = dev.kernel({"dropout", 3, sizeof push, {k_local}});
  rec.dispatch(k, {in(a.x), out(a.y), in(on ? a.step : a.x)}, push,
               groups_1d(ceil_div(a.n, 4), k_local));
}

}  // namespace

void dropout_forward(Device& dev, Recorder& rec, const DropoutArgs& a) {
  run_dropout(dev, rec, a, "dropout_forward");
}

void dropout_backward(Device& dev, Recorder& rec, const DropoutArgs& a) {
  run_dropout(dev, rec, a, "dropout_backward");
}

}  // namespace vkf::ops
