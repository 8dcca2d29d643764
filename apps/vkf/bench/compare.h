#pragma once
// `vkf bench compare`: result files side by side, joined on the row ids, each rate with its
// ratio to the first file's; as a Markdown table (readable in a terminal) or as one
// self-contained HTML page with inline SVG bar charts (no script, no network).
#include <string>
#include <vector>

#include "apps/vkf/bench/report.h"

namespace vkf::bench {

struct NamedReport {
  std::string file;
  Report report;
};

// One column per device of each file, in order; one line per row id, in the order the ids
// first appear.
struct Joined {
  struct Column {
    std::string file;
    const Report* report;
    const DeviceReport* device;
  };
  struct Line {
    std::string id, group, title, unit;
    std::vector<const Row*> cells;  // per column; nullptr where that file has no such row
  };
  std::vector<Column> columns;
  std::vector<Line> lines;
  // cell / the first column's cell, when both ran; 0 otherwise.
  static double ratio(const Line& line, size_t column);
};
Joined join(const std::vector<NamedReport>& files);

std::string compare_markdown(const Joined& j);
std::string compare_html(const Joined& j);

}  // namespace vkf::bench
