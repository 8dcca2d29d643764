#pragma once
// The readers that take bytes from outside, as fuzz targets: each takes any input, must refuse
// bad input with vkf::Error (caught here) and never crash, read out of bounds or break the
// invariants checked below (which abort, so libFuzzer and the tests see them). The same
// functions run in libFuzzer binaries (fuzz_<name>.cpp, scripts/fuzz) and over the committed
// seeds and regressions in the unit tests (tests/model/test_fuzz_inputs.cpp).
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

// An invariant the readers promise; abort() is what libFuzzer and the tests catch.
#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace vkf::fuzz {

// safetensors header and data rules, then the checkpoint's config against its tensors.
void safetensors(std::string_view bytes);
// The optimizer-state file beside a checkpoint.
void optimizer_state(std::string_view bytes);
// The model config JSON (a checkpoint's `config`, `vkf train --config`).
void config(std::string_view bytes);
// The line reader (caps, CR handling) and both UTF-8 checks, which must agree.
void lines(std::string_view bytes);
// The BLEU and chrF readers and metrics: hypothesis and reference text split at the first NUL.
void metrics(std::string_view bytes);

// The tools' inputs (fuzz/targets_tools.cpp): a tuning file (--tune FILE, `vkf tune --import`),
// a `vkf bench` result file as `vkf bench compare` reads and prints it (the Markdown table must
// keep one line a row), and a `vkf bench --rows` pattern.
void tuning_file(std::string_view bytes);
void bench_report(std::string_view bytes);
void rows_pattern(std::string_view bytes);

struct Target {
  const char* name;  // also the directory name under fuzz/corpus and fuzz/regressions
  void (*run)(std::string_view);
};
// Every target, for the tests that replay the seeds (fuzz/all_targets.cpp).
const std::vector<Target>& all_targets();

}  // namespace vkf::fuzz
