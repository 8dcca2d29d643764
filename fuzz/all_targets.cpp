// The list of every fuzz target, for the tests that replay the committed inputs
// (tests/model/test_fuzz_inputs.cpp). Apart from the targets themselves so that each libFuzzer
// binary links only the readers it fuzzes.
#include "fuzz/targets.h"

namespace vkf::fuzz {

const std::vector<Target>& all_targets() {
  static const std::vector<Target> list = {
      {"safetensors", safetensors},
      {"optimizer_state", optimizer_state},
      {"config", config},
      {"lines", lines},
      {"metrics", metrics},
      {"tuning_file", tuning_file},
      {"bench_report", bench_report},
      {"rows_pattern", rows_pattern},
  };
  return list;
}

}  // namespace vkf::fuzz
