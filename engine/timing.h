#pragma once
// How a recorded Sequence is timed: by the kernels' own timestamps on GPUs, as CUDA events time
// PyTorch's (there one submit and fence wait costs tens of microseconds, longer than many
// kernels), by the host clock on CPU devices (a submit costs little next to their kernels, and
// lavapipe's timestamps are host clock reads anyway). `vkf bench`, the Google Benchmark
// programs (apps/vkf/bench/timing.h adds their VKF_BENCH_TIMESTAMPS override) and the tuner
// (tune/) all time through these.
#include <vector>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf {

// Whether `info`'s device is timed by timestamps by default: a GPU whose queue writes them.
bool timestamps_preferred(const DeviceInfo& info);

// Runs `seq` once and returns the seconds it took: from its first to its last timestamp when
// it was recorded with them (RecorderOptions::profile), else by the host clock around submit
// and wait.
double timed_run(Sequence& seq);

// The seconds of `repeat` timed runs of `seq` (run it once before: pipelines, first touch).
struct Timing {
  std::vector<double> seconds;
  bool timestamps = false;  // from device timestamps (else the host clock)
  double median() const;
  double best() const;
};
Timing time_runs(Sequence& seq, int repeat);

// The median of `v` (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v);

}  // namespace vkf
