#pragma once
// Runs a `vkf bench` suite on one device: the peak rows first (every other row's peak fraction
// is of them), then the kernels, then the whole-model rows, with progress on a stream. And the
// readable table of a device's results.
#include <ostream>
#include <string>
#include <vector>

#include "apps/vkf/bench/context.h"
#include "apps/vkf/bench/report.h"
#include "apps/vkf/bench/rows.h"

namespace vkf::bench {

// Every row of `suite`, in the order it runs.
std::vector<RowSpec> suite_rows(Suite suite);

DeviceReport run_suite(Device& dev, const RunOptions& options, std::ostream& progress);

// A report's header: schema, version, suite, repeat, time, host.
Report new_report(const RunOptions& options);

// One line a row: check, title, median time, rate, fraction of peak (or why it was skipped).
std::string results_table(const DeviceReport& d);

}  // namespace vkf::bench
