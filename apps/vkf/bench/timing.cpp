#include "apps/vkf/bench/timing.h"

#include <cstdlib>
#include <string>

namespace vkf::bench {

bool timed_by_timestamps(const Device& dev) {
  if (const char* e = std::getenv("VKF_BENCH_TIMESTAMPS"); e && *e)
    return std::string(e) == "1" && dev.info().timestamp_valid_bits != 0;
  return timestamps_preferred(dev.info());
}

RecorderOptions timed_recorder(const Device& dev) {
  RecorderOptions o;
  o.profile = timed_by_timestamps(dev);
  return o;
}

}  // namespace vkf::bench
