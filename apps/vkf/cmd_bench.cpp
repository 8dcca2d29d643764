// vkf bench: the cross-vendor benchmark (apps/vkf/bench). Runs a suite on each chosen device,
// checks every timed kernel against the CPU reference, prints a table (progress on stderr) and
// writes the JSON result file; exits 2 when any row FAILs. `vkf bench compare` puts result files
// side by side (Markdown on stdout, --html for a page with bar charts).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "apps/tool_env/tool_env.h"
#include "apps/vkf/bench/compare.h"
#include "apps/vkf/bench/row_pattern.h"
#include "apps/vkf/bench/shapes.h"
#include "apps/vkf/bench/suite.h"
#include "apps/vkf/command.h"
#include "apps/vkf/tuning_choice.h"
#include "engine/engine.h"
#include "engine/file_io.h"

namespace vkf::app {
namespace {

// Exit status when a row's result is wrong (1 is any error that stopped the run).
constexpr int k_exit_failed_check = 2;

struct BenchArgs {
  std::string device, suite = "quick", json;
  std::string tune;  // --tune auto|off|FILE (apps/vkf/tuning_choice.h)
  bench::RunOptions options;
  bool list = false;
  std::vector<std::string> compare_files;
  std::string html;
};

// "" = the best device; "all" = every device; else comma-separated selectors ("0,0" opens two
// logical devices on device 0).
std::vector<DeviceInfo> chosen_devices(const Instance& instance, const std::string& selector) {
  const auto all = query_all_devices(instance.physical_devices(), instance.get());
  if (all.empty()) throw Error("no Vulkan device found");
  if (selector == "all") return all;
  std::vector<DeviceInfo> out;
  std::stringstream s(selector);
  std::string one;
  if (selector.empty()) return {select_device(all, "")};
  while (std::getline(s, one, ',')) out.push_back(select_device(all, one));
  return out;
}

int run_bench(const BenchArgs& a) {
  refuse_same_file("--json", a.json, {{"--tune", a.tune}});
  bench::RunOptions o = a.options;
  o.suite = bench::parse_suite(a.suite);
  if (o.repeat < 1) throw Error("--repeat must be at least 1");
  bench::check_row_pattern(o.rows, "--rows");
  bench::check_row_pattern(o.wrong_rows, "--wrong-kernel");
  if (a.list) {
    for (const bench::RowSpec& r : bench::suite_rows(o.suite))
      if (o.rows.empty() || bench::row_pattern_search(o.rows, r.id))
        std::cout << r.id << "\t" << r.title << "\n";
    return 0;
  }
  auto instance = std::make_shared<Instance>();
  const std::vector<DeviceInfo> infos = chosen_devices(*instance, a.device);
  bench::Report report = bench::new_report(o);
  for (const DeviceInfo& info : infos) {
    Device dev(instance, info);
    std::cerr << "vkf bench: suite " << a.suite << " on " << dev.label() << "\n";
    apply_tuning(dev, a.tune, bench_tune_shapes(o.suite), "vkf bench", tool::cache_dir());
    report.devices.push_back(bench::run_suite(dev, o, std::cerr));
    std::cout << bench::results_table(report.devices.back()) << std::flush;
  }
  if (!a.json.empty()) {
    bench::write_report(report, a.json);
    std::cerr << "vkf bench: results in " << a.json << "\n";
  }
  if (report.failed() > 0) {
    std::cerr << "vkf bench: " << report.failed() << " row(s) FAILED their check\n";
    return k_exit_failed_check;
  }
  return 0;
}

int run_compare(const BenchArgs& a) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& f : a.compare_files) inputs.push_back({"the result file", f});
  refuse_same_file("--html", a.html, inputs);
  std::vector<bench::NamedReport> files;
  for (const std::string& f : a.compare_files) files.push_back({f, bench::read_report(f)});
  const bench::Joined joined = bench::join(files);
  std::cout << bench::compare_markdown(joined);
  if (!a.html.empty()) {
    write_file_atomically(a.html, bench::compare_html(joined));
    std::cerr << "vkf bench compare: page in " << a.html << "\n";
  }
  return 0;
}

RegisterCommand reg(
    "bench", "Benchmark the kernels and the model on each device, each checked against the CPU",
    [](CLI::App& sub) {
      auto a = std::make_shared<BenchArgs>();
      sub.add_option("--device", a->device,
                     "Device: index, vendor or a part of its name; 'all'; or a comma-separated "
                     "list (default: the best one)");
      sub.add_option("--suite", a->suite, "quick (about a minute on lavapipe), standard, full")
          ->capture_default_str();
      sub.add_option("--json", a->json, "Write every figure and the device fingerprint here");
      add_tune_option(sub, a->tune);
      sub.add_option("--repeat", a->options.repeat,
                     "Timed runs per row after the checked one (at most 2 for rows over 1 s)")
          ->capture_default_str();
      sub.add_option(
          "--rows", a->options.rows,
          "Only the rows whose id matches this regular expression (RE2 syntax, see --list); the "
          "peak rows always run");
      sub.add_flag("--list", a->list, "List the suite's row ids and titles (those --rows selects)");
      // Test hook (tests/apps/test_bench.cpp): corrupt the checked output of the matching rows,
      // which must then FAIL.
      sub.add_option("--wrong-kernel", a->options.wrong_rows)->group("");
      CLI::App* cmp =
          sub.add_subcommand("compare", "Result files side by side, ratios to the first");
      cmp->add_option("files", a->compare_files, "vkf bench --json files")
          ->required()
          ->check(CLI::ExistingFile);
      cmp->add_option("--html", a->html, "Also write a self-contained page with bar charts");
      return [a, cmp]() { return cmp->parsed() ? run_compare(*a) : run_bench(*a); };
    });

}  // namespace
}  // namespace vkf::app
