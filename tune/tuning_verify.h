#pragma once
// A tuning file from outside the tuner (--tune FILE, VKF_TUNE=FILE, `vkf tune --import`, or the
// cache directory's, which --import writes) is held to what the tuner holds its own winners to:
// each entry's configuration must fit the device (engine/tuning_fit.h) and pass its family's
// correctness check against the double-precision reference (FamilyTuner<F>::check,
// tune/<family>_family.h). An entry that fails is dropped, so its class runs the default.
//
// The checks compile kernels (seconds on a CPU device), so an entry that passed is remembered
// in <cache dir>/<device stem>.tuning-checks, one line a pass, keyed by a hash of the entry, the
// device and driver (TuningKey) and this build's shaders: a later run, or a later file with the
// same entry, does not check it again; another driver or build does. Failures are not
// remembered: they are checked (and reported) each time.
#include <functional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/tuning_file.h"

namespace vkf::tune {

struct Verification {
  std::vector<std::string> dropped;  // "<entry>: <why>", one an entry removed
  size_t checked = 0;                // entries checked against the reference on this call
  size_t wrong = 0;                  // of those, the ones that failed (and were dropped)
  size_t remembered = 0;             // entries that passed on an earlier call
  size_t passed() const { return checked - wrong + remembered; }
};

// Test hook: true for an entry (by its entry_name(), e.g. "matmul f32/ab/m16/n16/k16 (...)")
// whose check sees its output corrupted after the kernel, as a wrong kernel would have written
// it: an entry that fits the device and still computes the wrong answer.
using WrongEntry = std::function<bool(const std::string& entry)>;

// Drops from `file` (of `dev`'s device: the caller compares the keys) every entry that misfits
// or fails its check. `cache_dir` "": nothing is remembered. Leaves `dev`'s tuning
// unset (the checks force one family's configuration and run the defaults of the others).
Verification verify_tuning(Device& dev, TuningFile& file, const std::string& cache_dir,
                           const WrongEntry& wrong = {});

// Records every entry of `file` as passed: the tuner's own winners, checked as it chose them.
void remember_verified(const Device& dev, const TuningFile& file, const std::string& cache_dir);

}  // namespace vkf::tune
