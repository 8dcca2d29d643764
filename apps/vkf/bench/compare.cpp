#include "apps/vkf/bench/compare.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace vkf::bench {
namespace {

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

bool ran(const Row* r) {
  return r && r->check != Check::skip && r->rate > 0;
}

// Markdown cells (and the list of files above them) come from the files compared: a bare '|'
// would open a cell, a line break end the row, so neither may pass through.
std::string cell_text(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n' || ch == '\r')
      out += ' ';
    else
      out += ch;
  }
  return out;
}

}  // namespace

double Joined::ratio(const Line& line, size_t column) {
  if (line.cells.empty() || !ran(line.cells[0]) || !ran(line.cells[column])) return 0;
  return line.cells[column]->rate / line.cells[0]->rate;
}

Joined join(const std::vector<NamedReport>& files) {
  Joined j;
  for (const NamedReport& f : files)
    for (const DeviceReport& d : f.report.devices) j.columns.push_back({f.file, &f.report, &d});
  std::map<std::string, size_t> index;
  for (size_t c = 0; c < j.columns.size(); ++c)
    for (const Row& r : j.columns[c].device->rows) {
      auto [it, fresh] = index.emplace(r.id, j.lines.size());
      if (fresh)
        j.lines.push_back(
            {r.id, r.group, r.title, r.unit, std::vector<const Row*>(j.columns.size(), nullptr)});
      Joined::Line& line = j.lines[it->second];
      if (line.unit.empty()) line.unit = r.unit;  // a row skipped in the first file
      line.cells[c] = &r;
    }
  return j;
}

std::string compare_markdown(const Joined& j) {
  std::ostringstream s;
  for (size_t c = 0; c < j.columns.size(); ++c) {
    const Joined::Column& col = j.columns[c];
    s << "- [" << c + 1 << "] " << cell_text(col.device->label) << " (" << cell_text(col.file)
      << "; suite " << cell_text(col.report->suite) << ", " << cell_text(col.report->created)
      << ", " << cell_text(col.report->host.value("cpu", std::string("?"))) << ")\n";
  }
  s << "\n| row | unit |";
  for (size_t c = 0; c < j.columns.size(); ++c) s << " [" << c + 1 << "] |";
  s << "\n|---|---|";
  for (size_t c = 0; c < j.columns.size(); ++c) s << "---:|";
  s << "\n";
  for (const Joined::Line& line : j.lines) {
    s << "| " << cell_text(line.title) << " | " << cell_text(line.unit) << " |";
    for (size_t c = 0; c < line.cells.size(); ++c) {
      const Row* r = line.cells[c];
      std::string text;
      if (!r)
        text = "-";
      else if (r->check == Check::skip)
        text = "skipped";
      else if (!ran(r))
        text = "FAIL";
      else {
        text = format("%.4g", r->rate);
        if (c > 0 && Joined::ratio(line, c) > 0) text += format(" (%.2fx)", Joined::ratio(line, c));
        if (r->check == Check::fail) text += " FAIL";
      }
      s << " " << text << " |";
    }
    s << "\n";
  }
  return s.str();
}

}  // namespace vkf::bench
