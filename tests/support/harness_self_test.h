#pragma once
// The half of a harness's self-test that every op family shares: its problem run twice, once
// with the harness's corrupt() hook after the kernel. The corrupted run must fail exactly the
// comparison named `corrupted`, the clean run none (so a harness that compared nothing, or the
// wrong output, fails here).
#include <string>
#include <vector>

#include "engine/engine.h"
#include "reference/comparison.h"
#include "tests/support/vk_test.h"

namespace vkf::test {

// make_run() returns a fresh run (poisoned outputs); compare(run) its comparisons.
template <class MakeRun, class Compare>
void check_corruption_caught(Device& dev, MakeRun make_run, Compare compare,
                             const std::string& corrupted) {
  for (bool corrupt : {true, false}) {
    const auto run = make_run();
    Recorder rec(dev);
    run.record(rec);
    if (corrupt) run.corrupt(rec);
    rec.finish().run();
    for (const ref::Comparison& cmp : compare(run)) {
      INFO((corrupt ? "corrupted: " : "") << cmp.describe());
      CHECK(cmp.ok() == !(corrupt && cmp.what() == corrupted));
    }
  }
}

}  // namespace vkf::test
