#pragma once
// How vkformer times a recorded Sequence, for the Google Benchmark programs in bench/ and for
// `vkf bench` alike. GPUs are timed by the kernels' own timestamps, as CUDA events time
// PyTorch's: there one submit and fence wait costs tens of microseconds, longer than many of
// these kernels. CPU devices are timed by the host clock (a submit costs little next to their
// kernels, and lavapipe's timestamps are host clock reads anyway). VKF_BENCH_TIMESTAMPS=1 or 0
// forces either.
#include <vector>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::bench {

bool timed_by_timestamps(const Device& dev);

// Options for the recorder of a timed sequence: timestamps around its dispatches where the
// device is timed by them.
RecorderOptions timed_recorder(const Device& dev);

// Runs `seq` once and returns the seconds it took: from its first to its last timestamp when
// it was recorded with them (timed_recorder), else by the host clock around submit and wait.
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

}  // namespace vkf::bench
