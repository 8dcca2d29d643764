// `vkf bench compare --html`: one page, everything inline (CSS and SVG, no script, no fonts or
// images from elsewhere), so it opens offline and can be mailed. One bar chart per row group;
// in each row the longest bar is the fastest device, and each bar's text gives its rate and its
// ratio to the first file.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "apps/common/html.h"
#include "apps/vkf/bench/compare.h"

namespace vkf::bench {
namespace {

// Distinct on screen and in print; the first two are what tests/apps look for in a screenshot.
constexpr const char* k_palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                     "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr size_t k_colors = sizeof k_palette / sizeof k_palette[0];

constexpr int k_label_w = 430, k_bar_w = 420, k_text_w = 190, k_bar_h = 14, k_gap = 3,
              k_row_pad = 12;

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void chart(std::ostringstream& s, const Joined& j, const std::string& group) {
  std::vector<const Joined::Line*> lines;
  for (const Joined::Line& l : j.lines)
    if (l.group == group) lines.push_back(&l);
  const size_t n = j.columns.size();
  const int row_h = int(n) * (k_bar_h + k_gap) + k_row_pad;
  const int width = k_label_w + k_bar_w + k_text_w, height = int(lines.size()) * row_h + 8;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" role=\"img\" aria-label=\"" << app::html_escape(group) << "\">\n";
  int y = 4;
  for (const Joined::Line* l : lines) {
    double best = 0;
    for (const Row* r : l->cells)
      if (r && r->check != Check::skip) best = std::max(best, r->rate);
    const int block = int(n) * (k_bar_h + k_gap);
    s << "<text x=\"" << k_label_w - 8 << "\" y=\"" << y + block / 2 + 4
      << "\" text-anchor=\"end\" class=\"label\">" << app::html_escape(l->title) << "</text>\n";
    for (size_t c = 0; c < n; ++c) {
      const int by = y + int(c) * (k_bar_h + k_gap);
      const Row* r = l->cells[c];
      std::string text;
      if (!r || r->check == Check::skip || r->rate <= 0 || best <= 0) {
        text = !r ? "not measured" : r->check == Check::skip ? "skipped" : "FAIL";
      } else {
        const int w = std::max(1, int(k_bar_w * r->rate / best));
        s << "<rect x=\"" << k_label_w << "\" y=\"" << by << "\" width=\"" << w << "\" height=\""
          << k_bar_h << "\" fill=\"" << k_palette[c % k_colors] << "\"><title>"
          << app::html_escape(j.columns[c].device->label) << "</title></rect>\n";
        text = format("%.4g ", r->rate) + l->unit;
        if (const double q = Joined::ratio(*l, c); c > 0 && q > 0) text += format(" (%.2fx)", q);
        if (r->check == Check::fail) text += " FAIL";
      }
      s << "<text x=\"" << k_label_w + k_bar_w + 6 << "\" y=\"" << by + k_bar_h - 3 << "\" class=\""
        << (r && r->check == Check::fail ? "fail" : "value") << "\">" << app::html_escape(text)
        << "</text>\n";
    }
    y += row_h;
  }
  s << "</svg>\n";
}

}  // namespace

std::string compare_html(const Joined& j) {
  std::ostringstream s;
  s << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<title>vkf bench compare</title>\n<style>\n"
       "body{font:14px/1.4 sans-serif;margin:24px;color:#222;background:#fff}\n"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
       ".swatch{display:inline-block;width:14px;height:14px;margin-right:6px;vertical-align:-2px}\n"
       "svg text{font:12px sans-serif}svg .fail{fill:#c00;font-weight:bold}\n"
       "table{border-collapse:collapse;margin-top:12px}td,th{border:1px solid #ccc;padding:2px 8px}"
       "td.n{text-align:right}\n"
       "</style></head><body>\n<h1>vkf bench: "
    << j.columns.size() << " device" << (j.columns.size() == 1 ? "" : "s")
    << "</h1>\n<p>Bars: each row's rate, the fastest "
       "device's bar full length; the ratio is to the first device.</p>\n<ol>\n";
  for (size_t c = 0; c < j.columns.size(); ++c) {
    const Joined::Column& col = j.columns[c];
    s << "<li><span class=\"swatch\" style=\"background:" << k_palette[c % k_colors] << "\"></span>"
      << app::html_escape(col.device->label) << " <small>(" << app::html_escape(col.file)
      << "; suite " << app::html_escape(col.report->suite) << ", "
      << app::html_escape(col.report->created) << ", "
      << app::html_escape(col.report->host.value("cpu", std::string("?"))) << ")</small></li>\n";
  }
  s << "</ol>\n";
  std::vector<std::string> groups;
  for (const Joined::Line& l : j.lines)
    if (std::find(groups.begin(), groups.end(), l.group) == groups.end()) groups.push_back(l.group);
  for (const std::string& g : groups) {
    s << "<h2>" << app::html_escape(g) << "</h2>\n";
    chart(s, j, g);
  }
  s << "<h2>All figures</h2>\n<table><tr><th>row</th><th>unit</th>";
  for (size_t c = 0; c < j.columns.size(); ++c) s << "<th>[" << c + 1 << "]</th>";
  s << "</tr>\n";
  for (const Joined::Line& l : j.lines) {
    s << "<tr><td>" << app::html_escape(l.title) << "</td><td>" << app::html_escape(l.unit)
      << "</td>";
    for (size_t c = 0; c < l.cells.size(); ++c) {
      const Row* r = l.cells[c];
      std::string t = !r ? "-" : r->check == Check::skip ? "skipped" : format("%.4g", r->rate);
      if (r && r->check == Check::fail) t += " FAIL";
      if (const double q = Joined::ratio(l, c); c > 0 && q > 0) t += format(" (%.2fx)", q);
      s << "<td class=\"n\""
        << (r && r->check == Check::skip ? " title=\"" + app::html_escape(r->reason) + "\"" : "")
        << ">" << app::html_escape(t) << "</td>";
    }
    s << "</tr>\n";
  }
  s << "</table>\n</body></html>\n";
  return s.str();
}

}  // namespace vkf::bench
