// The tools' fuzz targets (fuzz/targets.h): the tuning file, `vkf bench compare`'s result files
// and `vkf bench --rows` patterns.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/vkf/bench/compare.h"
#include "apps/vkf/bench/report.h"
#include "apps/vkf/bench/row_pattern.h"
#include "engine/error.h"
#include "engine/tuning_file.h"
#include "fuzz/targets.h"

namespace vkf::fuzz {

void tuning_file(std::string_view bytes) {
  // read_tuning_file reads a path: the bytes as a file in memory, no disk.
  const int fd = memfd_create("vkf-fuzz-tuning", 0);
  FUZZ_CHECK(fd >= 0);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    FUZZ_CHECK(n > 0);
    done += size_t(n);
  }
  try {
    const TuningFile f = read_tuning_file("/proc/self/fd/" + std::to_string(fd));
    // What the parser promises the kernels: every entry under its own shape's class, no zero
    // tile or block, tiles whole multiples of their blocks.
    ops::for_each_family([&]<class F>(std::type_identity<F>) {
      for (const TunedOf<F>& t : f.of<F>()) FUZZ_CHECK(t.shape_class == F::shape_class(t.shape));
    });
    for (const TunedMatmul& t : f.of<ops::MatmulFamily>()) {
      const ops::MatmulConfig& c = t.config;
      FUZZ_CHECK(c.workgroup && c.bm && c.bn && c.bk && c.tm && c.tn);
      FUZZ_CHECK(c.bm % c.tm == 0 && c.bn % c.tn == 0);
    }
    for (const TunedLayerNorm& t : f.of<ops::LayerNormFamily>())
      FUZZ_CHECK(t.config.workgroup_size > 0);
    for (const TunedAdam& t : f.of<ops::AdamFamily>())
      FUZZ_CHECK(t.config.workgroup_size && t.config.elems);
    const auto tuning = make_tuning(f, "<fuzz>");
    FUZZ_CHECK(tuning->of<ops::MatmulFamily>().size() <= f.of<ops::MatmulFamily>().size());
  } catch (const Error&) {
  }
  close(fd);
}

void bench_report(std::string_view bytes) {
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded()) return;
  try {
    const std::vector<bench::NamedReport> files = {
        {"a|b\nc.json", bench::report_from_json(j, "f")}};
    for (const bench::DeviceReport& d : files[0].report.devices) FUZZ_CHECK(d.failed() >= 0);
    const bench::Joined joined = bench::join(files);
    // The Markdown table: a header, a rule, one line a row; no cell may add a line.
    const std::string md = bench::compare_markdown(joined);
    const size_t table = md.find("\n| row |");
    FUZZ_CHECK(table != std::string::npos);
    size_t lines = 0;
    for (size_t i = table + 1; i < md.size(); ++i) lines += md[i] == '\n';
    FUZZ_CHECK(lines == joined.lines.size() + 2);
    (void)bench::compare_html(joined);
  } catch (const Error&) {
  }
}

void rows_pattern(std::string_view bytes) {
  // The pattern, then a row id after the first NUL.
  const size_t nul = bytes.find('\0');
  const std::string pattern(bytes.substr(0, nul));
  const std::string id =
      nul == std::string_view::npos ? "matmul/f32/1024" : std::string(bytes.substr(nul + 1));
  try {
    bench::check_row_pattern(pattern, "--rows");
  } catch (const Error&) {
    FUZZ_CHECK(!bench::row_pattern_search(pattern, id));  // a refused pattern selects nothing
    return;
  }
  if (!pattern.empty() && pattern.find_first_of("\\.[]()*+?{}|^$") == std::string::npos)
    FUZZ_CHECK(bench::row_pattern_search(pattern, id) == (id.find(pattern) != std::string::npos));
  else
    (void)bench::row_pattern_search(pattern, id);
}

}  // namespace vkf::fuzz
