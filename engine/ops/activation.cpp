#include "engine/ops/activation.h"

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/elementwise.h"

namespace vkf::ops {

void relu_backward(Device& dev, Recorder& rec, const BufferRef& h, const BufferRef& dh, uint32_t n,
                   DType dtype) {
  check_storage_dtype(dev, dtype, "relu_backward");
  const uint64_t bytes = uint64_t{n} * dtype_bytes(dtype);
  if (h.size < bytes || dh.size < bytes)
    throw Error("relu_backward: buffers smaller than " + std::to_string(n) + " " +
                dtype_name(dtype) + " values");
  constexpr uint32_t local = 256;
  struct {
    uint32_t n;
  } push{n};
  const Kernel& k = dev.kernel({kernel_for_dtype("relu_backward", dtype), 2, sizeof push, {local}});
  rec.dispatch(k, {in(h), inout(dh)}, push, groups_1d(n, local));
}

}  // namespace vkf::ops
