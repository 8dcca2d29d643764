#pragma once
// The rows of `vkf bench`, one family per file: rows_peak.cpp (the device's measured peaks),
// rows_matmul.cpp, rows_attention.cpp, rows_memory.cpp (LayerNorm, cross-entropy, Adam) and
// rows_model.cpp (a whole training step, a decoder step). Each row sets up its inputs, records
// its kernel once, runs it once and checks that run against the CPU reference, then times
// `repeat` more runs.
#include <functional>
#include <string>
#include <vector>

#include "apps/vkf/bench/context.h"

namespace vkf::bench {

struct RowSpec {
  std::string id, group, title;
  // Fills the row's check and timing; throws Refused (SKIP) or anything else (FAIL).
  std::function<void(Context&, Row&)> run;
};

// Rows in the order they run; those of `suite` and the smaller suites.
std::vector<RowSpec> peak_rows();  // always run first: the other rows' peak fractions need them
std::vector<RowSpec> matmul_rows(Suite suite);
std::vector<RowSpec> attention_rows(Suite suite);
std::vector<RowSpec> memory_rows(Suite suite);
std::vector<RowSpec> model_rows(Suite suite);

}  // namespace vkf::bench
