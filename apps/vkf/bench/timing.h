#pragma once
// How vkformer times a recorded Sequence, for the Google Benchmark programs in bench/ and for
// `vkf bench` alike: engine/timing.h (timestamps on GPUs, the host clock on CPU devices), with
// VKF_BENCH_TIMESTAMPS=1 or 0 forcing either.
#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/timing.h"

namespace vkf::bench {

using vkf::median;
using vkf::time_runs;
using vkf::timed_run;
using vkf::Timing;

bool timed_by_timestamps(const Device& dev);

// Options for the recorder of a timed sequence: timestamps around its dispatches where the
// device is timed by them.
RecorderOptions timed_recorder(const Device& dev);

}  // namespace vkf::bench
