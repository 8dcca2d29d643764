#include "engine/ops/basic.h"

#include "engine/error.h"
#include "engine/launch.h"

namespace vkf::ops {

void fill(Device& dev, Recorder& rec, const BufferRef& y, uint32_t n, float value) {
  if (y.size < uint64_t{n} * 4)
    throw Error("fill: " + std::to_string(n) + " floats do not fit in " + std::to_string(y.size) +
                " bytes");
  struct {
    uint32_t n;
    float value;
  } push{n, value};
  const Kernel& k = dev.kernel({"fill", 1, sizeof push, {k_local_1d}});
  rec.dispatch(k, {out(y)}, push, groups_1d(n, k_local_1d));
}

void axpy(Device& dev, Recorder& rec, const BufferRef& x, const BufferRef& y,
          const BufferRef& scalars, uint32_t alpha_index, uint32_t n) {
  if (x.size < uint64_t{n} * 4 || y.size < uint64_t{n} * 4)
    throw Error("axpy: buffers smaller than " + std::to_string(n) + " floats");
  if (scalars.size < (uint64_t{alpha_index} + 1) * 4)
    throw Error("axpy: scalar index " + std::to_string(alpha_index) + " outside the scalar buffer");
  struct {
    uint32_t n;
    uint32_t alpha_index;
  } push{n, alpha_index};
  const Kernel& k = dev.kernel({"axpy", 3, sizeof push, {k_local_1d}});
  rec.dispatch(k, {in(x), inout(y), in(scalars)}, push, groups_1d(n, k_local_1d));
}

}  // namespace vkf::ops
