#include "apps/vkf/bench/suite.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <sstream>

#include "apps/vkf/bench/fingerprint.h"

namespace vkf::bench {
namespace {

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// CPU seconds of the whole process (every thread: lavapipe's workers too). Beside the wall time
// in the progress lines: on a shared machine the two part.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::vector<RowSpec> suite_rows(Suite suite) {
  std::vector<RowSpec> rows = peak_rows();
  for (auto part :
       {matmul_rows(suite), attention_rows(suite), memory_rows(suite), model_rows(suite)})
    rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

DeviceReport run_suite(Device& dev, const RunOptions& options, std::ostream& progress) {
  const auto start = std::chrono::steady_clock::now();
  DeviceReport report;
  report.label = device_label(dev.info());
  report.fingerprint = device_fingerprint(dev.info());
  Context cx{dev, options};
  std::vector<RowSpec> rows;
  for (RowSpec& r : suite_rows(options.suite))  // the peaks always: the fractions need them
    if (r.group == "peak" || cx.selected(r.id)) rows.push_back(std::move(r));
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowSpec& spec = rows[i];
    progress << "[" << i + 1 << "/" << rows.size() << "] " << spec.title << " ..." << std::flush;
    Row row;
    row.id = spec.id;
    row.group = spec.group;
    row.title = spec.title;
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = cpu_seconds();
    try {
      spec.run(cx, row);
    } catch (const Refused& e) {
      row = Row{spec.id, spec.group, spec.title, Check::skip, e.what()};
    } catch (const std::exception& e) {  // the kernel or the driver failed outright
      row = Row{spec.id, spec.group, spec.title, Check::fail, std::string("error: ") + e.what()};
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    progress << " " << check_name(row.check);
    if (row.check != Check::skip) progress << format(" %.4g ", row.rate) << row.unit;
    progress << format(" (%.1f s, ", secs) << format("%.1f s CPU)", cpu_seconds() - cpu0) << "\n";
    if (row.check == Check::fail) progress << "    " << row.reason << "\n";
    report.rows.push_back(std::move(row));
  }
  report.peak = cx.peak;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

Report new_report(const RunOptions& options) {
  Report r;
  r.vkf_version = "0.1.0";
  r.suite = suite_name(options.suite);
  r.repeat = options.repeat;
  r.created = utc_now();
  r.host = host_description();
  return r;
}

std::string results_table(const DeviceReport& d) {
  std::ostringstream s;
  s << d.label << "\n";
  s << format("  peaks: fp32 FMA %.1f GFLOP/s", d.peak.fp32_gflops)
    << (d.peak.fp16_gflops ? format(", fp16 FMA %.1f GFLOP/s", *d.peak.fp16_gflops) : "")
    << (d.peak.coopmat_gflops ? format(", tensor cores %.1f GFLOP/s", *d.peak.coopmat_gflops) : "")
    << format(", copy %.1f GB/s\n", d.peak.copy_gbytes_s);
  size_t width = 0;
  for (const Row& r : d.rows) width = std::max(width, r.title.size());
  s << "  " << pad("check", 6) << pad("row", width + 2) << pad("median", 14) << pad("rate", 22)
    << "of peak\n";
  for (const Row& r : d.rows) {
    s << "  " << pad(check_name(r.check), 6) << pad(r.title, width + 2);
    if (r.check == Check::skip || r.times_ms.empty()) {
      s << r.reason << "\n";
      continue;
    }
    s << pad(format("%.3f ms", r.time_ms), 14) << pad(format("%.4g ", r.rate) + r.unit, 22);
    if (r.peak_fraction) s << format("%.2f ", *r.peak_fraction) << r.peak_basis;
    s << "\n";
  }
  s << format("  %.0f s", d.seconds) << ", " << d.failed() << " failed\n";
  return s.str();
}

}  // namespace vkf::bench
