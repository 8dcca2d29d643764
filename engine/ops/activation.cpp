#include "engine/ops/activation.h"

#include "engine/error.h"
#include "engine/launch.h"

namespace vkf::ops {

void relu_backward(Device& dev, Recorder& rec, const BufferRef& h, const BufferRef& dh,
                   uint32_t n) {
  if (h.size < uint64_t{n} * 4 || dh.size < uint64_t{n} * 4)
    throw Error("relu_backward: buffers smaller than " + std::to_string(n) + " floats");
  constexpr uint32_t local = 256;
  struct {
    uint32_t n;
  } push{n};
  const Kernel& k = dev.kernel({"relu_backward", 2, sizeof push, {local}});
  rec.dispatch(k, {in(h), inout(dh)}, push, groups_1d(n, local));
}

}  // namespace vkf::ops
