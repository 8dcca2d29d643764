#pragma once
// Which kernel configurations a device runs for a model: the device's tuning file
// (engine/tuning_file.h), a short tuning run first where there is none yet, or the static
// tables. `vkf train`, `vkf translate` and vkf::Translator all come through here, with the
// problems the model states (model/op_problems.h).
#include <functional>
#include <string>

#include "engine/device.h"
#include "engine/ops/op_problems.h"

namespace vkf::model {

struct TuningChoice {
  // auto: the tuning file in the cache directory when it matches this device and driver, else
  // a tuning run of `budget_seconds` over the problems first, written there; off: the static
  // tables; anything else: that tuning file (an error when it cannot be read; another device's
  // or driver's is ignored, with a note).
  // "": the device's tuning is left as it is (a host may have set one itself).
  std::string use;
  double budget_seconds = 30;
  std::string cache_dir;  // for auto; "": the device's pipeline cache directory
  // Hears what a user should know on the way, a line at a time (that a first tuning run starts,
  // the entries a check dropped). vkf::Translator passes it to apply_tuning.
  std::function<void(const std::string&)> note;

  // Throws vkf::Error when auto's budget is not a positive number of seconds up to a week (the
  // tuner's deadline arithmetic must not overflow).
  void validate() const;
};

// Applies `choice` to `dev` (Device::set_tuning) and returns what it did in a few words:
// "tuned (FILE)" or "default (why)" ("as set on the device" when choice.use is ""). `note` hears
// what a user should know on the way (that a first tuning run starts, and which classes a spent
// budget left at their defaults).
std::string apply_tuning(Device& dev, const TuningChoice& choice, const ops::OpProblems& problems,
                         const std::function<void(const std::string&)>& note = {});

}  // namespace vkf::model
