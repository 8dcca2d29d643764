#pragma once
// What the tuner times candidates with. An interface, so that the tests drive the search with a
// fake timer and assert which candidate wins with no timing in the assertion.
#include <string>

#include "engine/device.h"
#include "engine/recorder.h"

namespace vkf::tune {

class Timer {
 public:
  virtual ~Timer() = default;
  // Options for the recorder of the sequences handed to seconds() (timestamps or not).
  virtual RecorderOptions recorder_options(const Device& dev) const = 0;
  // Seconds one run of `seq` takes: `seq` runs the candidate configuration `candidate` (its
  // description, e.g. MatmulConfig::describe()) once at `shape_class`, recorded with
  // recorder_options(). A timer may stop early and return what it has once a run exceeds
  // `give_up_above` (the search's pruning: that candidate cannot win).
  virtual double seconds(Sequence& seq, const std::string& candidate,
                         const std::string& shape_class, double give_up_above) = 0;
};

// The device's clock (engine/timing.h: timestamps on GPUs, the host clock on CPU devices): one
// warm-up run, then the median of `repeats` runs (three: a budget of minutes buys more
// candidates rather than more runs of each), or the first run alone when it is already
// over the give-up time.
class DeviceTimer : public Timer {
 public:
  explicit DeviceTimer(int repeats = 3) : repeats_(repeats) {}
  RecorderOptions recorder_options(const Device& dev) const override;
  double seconds(Sequence& seq, const std::string& candidate, const std::string& shape_class,
                 double give_up_above) override;

 private:
  int repeats_;
};

}  // namespace vkf::tune
