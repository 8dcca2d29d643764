#include "tune/timer.h"

#include "engine/timing.h"

namespace vkf::tune {

RecorderOptions DeviceTimer::recorder_options(const Device& dev) const {
  RecorderOptions o;
  o.profile = timestamps_preferred(dev.info());
  return o;
}

double DeviceTimer::seconds(Sequence& seq, const std::string&, const std::string&,
                            double give_up_above) {
  timed_run(seq);  // pipelines, first touch of the buffers
  const double first = timed_run(seq);
  if (first > give_up_above) return first;
  Timing t = time_runs(seq, repeats_ - 1);
  t.seconds.push_back(first);
  return t.median();
}

}  // namespace vkf::tune
