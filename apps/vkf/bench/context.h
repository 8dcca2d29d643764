#pragma once
// What every row of `vkf bench` gets: the device, the options of the run, the device's measured
// peaks (known once the peak rows ran) and the test hook that makes a row's kernel wrong.
#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apps/vkf/bench/report.h"
#include "apps/vkf/bench/row_pattern.h"
#include "apps/vkf/bench/shapes.h"
#include "apps/vkf/bench/timing.h"
#include "engine/device.h"
#include "engine/error.h"
#include "engine/ops/peak.h"
#include "reference/stored.h"

namespace vkf::bench {

struct RunOptions {
  Suite suite = Suite::quick;
  int repeat = 5;          // timed runs per row (after one warm-up run, which is also checked)
  std::string rows;        // RE2 pattern searched in the row ids (row_pattern.h); "" = every row
  std::string wrong_rows;  // test hook: rows whose checked output is corrupted (see sabotage())
};

// Thrown by a row that the device or the dtype cannot run: the row is SKIP with this reason.
struct Refused : Error {
  using Error::Error;
};

struct Context {
  Device& dev;
  RunOptions options;
  Peak peak;
  std::optional<ops::DevicePeak> probes;  // the peak probes' best configurations
  std::mt19937 rng{20240601};

  // Timed runs for a row whose checked first run took `first_seconds`: `repeat`, but at most 2
  // for rows that take over a second a run (the large shapes on CPU devices).
  int repeats(double first_seconds) const {
    return first_seconds > 1.0 ? std::max(1, std::min(options.repeat, 2)) : options.repeat;
  }
  bool selected(const std::string& id) const { return matches(options.rows, id, true); }
  // The test hook behind `vkf bench --wrong-kernel REGEX`: true for the rows whose kernel is to
  // be made wrong. Each such row then corrupts one element of the output it checks, in the same
  // recorded sequence right after its kernel (or a weight the model rows' graphs read), so the
  // check must report FAIL and vkf bench exit non-zero.
  bool sabotage(const std::string& id) const { return matches(options.wrong_rows, id, false); }

 private:
  static bool matches(const std::string& pattern, const std::string& id, bool empty_matches) {
    if (pattern.empty()) return empty_matches;
    return row_pattern_search(pattern, id);
  }
};

// The bit pattern the hook writes: reference/stored.h's, which the tuner's checks write too.
using ref::k_wrong_bits;

// How a row's rate relates to the device's peak. fp16_fma: tensor-core rows, against the tensor
// cores' measured rate (peak/fp16_coopmat) where it ran, else the fp16 FMA peak.
enum class Basis { none, fp32_fma, fp16_fma, copy };

// Fills the row's timing figures: `amount` is what one run does in `unit` terms (FLOPs for
// GFLOP/s, bytes for GB/s, tokens for tokens/s); `flops` (0: none) relates a tokens/s row to the
// FMA peak.
void set_timing(Row& row, const Context& cx, const Timing& t, double amount,
                const std::string& unit, Basis basis, double flops = 0);

}  // namespace vkf::bench
