#include "tune/family_tuner.h"

#include <cmath>

namespace vkf::tune {

void fill_small(Device& dev, std::initializer_list<const Buffer*> buffers, DType t) {
  Recorder rec(dev);
  const uint32_t bits = t == DType::f16 ? 0x2c002c00u : 0x3d000000u;
  for (const Buffer* b : buffers)
    if (b->size() >= 4) rec.fill(b->ref().slice(0, b->size() & ~VkDeviceSize(3)), bits);
  rec.finish().run();
}

double time_sequence(Device& dev, Timer& timer, const std::string& candidate,
                     const std::string& shape_class, double give_up,
                     const std::function<void(Recorder&)>& record) {
  Recorder rec(dev, timer.recorder_options(dev));
  record(rec);
  Sequence seq = rec.finish();
  return timer.seconds(seq, candidate, shape_class, give_up);
}

double wg_distance(uint32_t a, uint32_t b) {
  return std::fabs(std::log2(double(a) / double(b)));
}

std::string first_failure(const std::vector<ref::Comparison>& checked, const std::string& where) {
  for (const ref::Comparison& cmp : checked)
    if (!cmp.ok())
      return cmp.what() + " wrong at element " + std::to_string(cmp.worst_index()) + ": " +
             cmp.describe() + " (" + where + ")";
  return "";
}

}  // namespace vkf::tune
