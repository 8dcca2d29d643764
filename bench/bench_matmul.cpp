// Matmul throughput, fp32 and f16 storage, side by side with OpenBLAS cblas_sgemm (fp32, same
// CPU) and PyTorch's torch.matmul (bench/torch_matmul.py: cuBLAS with TF32 off on a CUDA machine,
// else the CPU) on the same shapes in the same run. The device is timed by replaying a recorded
// Sequence (uploads excluded); on lavapipe vkf, OpenBLAS and CPU PyTorch run on the same cores,
// so the ratios are the meaningful figures there.
//
//   ./bench/bench_matmul                          all shapes
//   VKF_BENCH_SKIP_LARGE=1 ./bench/bench_matmul   skip the vocabulary projection and the like
//   VKF_BENCH_F16_ALL=1                           f16 rows at every shape (default: the smaller)
//   VKF_BENCH_ROW_BLOCK=<rows>                    each matmul as dispatches of that many rows
//                                                 of A and C, in one buffer each (not A^T B)
//   VKF_BENCH_SHAPES=<m>x<n>x<k>:<form>[,...]     these shapes instead of the model's (form ab,
//                                                 abt or atb; f16 rows at each), e.g.
//                                                 25000x512x2048:abt,8192x512x2048:abt
//   VKF_BENCH_TORCH=0                             no PyTorch; VKF_PYTHON picks its interpreter
//   VKF_BENCH_DEVICE=<selector>                   pick the Vulkan device (default: best)
//   VKF_BENCH_TUNING=<file>                       run the device with a `vkf tune` file
//   VKF_MATMUL_CONFIG=<row>                       force a tuning-table row (default: device's,
//                                                 which for f16 on a GPU with
//                                                 VK_KHR_cooperative_matrix is a khr_coopmat
//                                                 row); rows the device or dtype refuses are
//                                                 skipped (coopmat rows: f16 only)
//   VKF_MATMUL_TILE=wg,bm,bn,bk,tm,tn,shared      try a configuration not in the table (tuning)
//   VKF_BENCH_COOPMAT=<row>[,<row>...]            after each vkf_matmul_f16 row, one row per
//                                                 listed tensor-core row forced
//                                                 (vkf_matmul_f16_<row>), with ratio_f16 = its
//                                                 GFLOP/s over the vkf_matmul_f16 row's in the
//                                                 same run (the device's row, or
//                                                 VKF_MATMUL_CONFIG's); a row with values
//                                                 changed, for tile sweeps: nv_coopmat2/bk32/wg128
//                                                 (keys wg bm bn bk tm tn stages)
//   VKF_BENCH_KHR_DIAG=<bits>[,<bits>...]         after each KHR row of VKF_BENCH_COOPMAT, the
//                                                 same row with parts of its k-loop dropped
//                                                 (vkf_matmul_f16_<row>_diag<bits>; results
//                                                 wrong, timing only; MatmulArgs::
//                                                 khr_diagnostic): 1 no global reads, 2 no
//                                                 barriers or staging, 3 neither, 4 (with 2)
//                                                 no fragment loads either: the products alone
//
// Rows: openblas_sgemm, vkf_matmul_f32 and vkf_matmul_f16 (fp16 storage, fp32 arithmetic), with
// arguments m/n/k/form. At A^T B (the weight gradient's form), the vkf rows get a split-k
// workspace as in training (the label says split_k=<slices> where the engine split), and
// vkf_matmul_<dtype>_nosplit runs without one (f16: ratio_f16 = its GFLOP/s over the split
// row's; VKF_MATMUL_SPLIT_K=0 turns the split off everywhere). Counters: GFLOP/s (2 m n k per
// call); on the vkf rows ratio_openblas = vkf GFLOP/s / OpenBLAS GFLOP/s at the same shape (f32
// rows; OpenBLAS is benchmarked first), torch_GFLOP/s and ratio_torch = vkf GFLOP/s / PyTorch
// GFLOP/s at the same shape, form and dtype (PyTorch runs once, before the first vkf row, for every
// vkf row the filter selects; the label names what it ran on), and ratio_peak = vkf GFLOP/s / the
// device's measured fp32 FMA rate (peak_GFLOP/s, bench/bench_peak.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "apps/tool_env/tool_env.h"
#include "apps/vkf/bench/shapes.h"
#include "bench/bench_device.h"
#include "bench/bench_peak.h"
#include "bench/openblas_env.h"
#include "bench/torch_side.h"
#include "engine/engine.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/matmul.h"

#ifdef VKF_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using Shape = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // m, n, k, form
using Case = std::tuple<int64_t, int64_t, int64_t, int64_t, vkf::DType>;

struct Shared {
  std::shared_ptr<vkf::Instance> instance;
  std::unique_ptr<vkf::Device> device;
  std::map<Shape, double> openblas_gflops;
  std::map<Shape, double> f16_gflops;  // the vkf_matmul_f16 rows' (ratio_f16)
};

Shared& shared() {
  static Shared s = [] {
    Shared r;
    vkf::tool::configure_cpu_driver();  // as the vkf command runs it (engine/cpu_driver.h)
    r.instance = std::make_shared<vkf::Instance>(vkf::tool::instance_options());
    const char* sel = std::getenv("VKF_BENCH_DEVICE");
    r.device =
        vkf::Device::create(r.instance, vkf::tool::device_options({.selector = sel ? sel : ""}));
    vkf::bench::apply_bench_tuning(*r.device);
    return r;
  }();
  return s;
}

bool env_is(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e && std::string(e) == value;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// v stored as `dtype` into b: f32 as it is, f16 through the engine's on-device cast (round to
// nearest even), from a temporary fp32 copy.
void upload_as(vkf::Device& dev, const vkf::BufferRef& b, const std::vector<float>& v,
               vkf::DType dtype) {
  if (dtype == vkf::DType::f32) {
    dev.upload(b, v);
    return;
  }
  vkf::Buffer f32 = dev.allocate(v.size() * 4, "fp32 staging for the f16 cast");
  dev.upload(f32, v);
  vkf::Recorder rec(dev);
  vkf::ops::cast_f32_to_f16(dev, rec, {.x = f32, .y = b, .n = uint32_t(v.size())});
  rec.finish().run();
}

// CPU seconds of the whole process (all threads: lavapipe's workers, OpenBLAS's pool). The
// machine may be shared, so GFLOP per CPU-second is reported beside the wall-clock rate.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// VKF_MATMUL_TILE, else VKF_MATMUL_CONFIG, else nullptr (the device's row).
const vkf::ops::MatmulConfig* forced_config() {
  static vkf::ops::MatmulConfig custom{};
  if (const char* t = std::getenv("VKF_MATMUL_TILE")) {
    unsigned v[7] = {};
    if (std::sscanf(t, "%u,%u,%u,%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) !=
        7)
      throw vkf::Error("VKF_MATMUL_TILE wants wg,bm,bn,bk,tm,tn,shared");
    custom = {"custom", v[0], v[1], v[2], v[3], v[4], v[5], v[6] != 0};
    return &custom;
  }
  const char* forced = std::getenv("VKF_MATMUL_CONFIG");
  return forced ? &vkf::ops::matmul_config(forced) : nullptr;
}

// The comma-separated words of an environment variable (none where it is unset).
std::vector<std::string> env_words(const char* name) {
  std::vector<std::string> words;
  const char* list = std::getenv(name);
  std::string rest = list ? list : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (comma != 0) words.push_back(rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return words;
}

// VKF_BENCH_KHR_DIAG's bit sets (1..7; anything else throws).
std::vector<uint32_t> khr_diagnostics() {
  std::vector<uint32_t> bits;
  for (const std::string& word : env_words("VKF_BENCH_KHR_DIAG")) {
    if (word.size() != 1 || word[0] < '1' || word[0] > '7')
      throw std::runtime_error("VKF_BENCH_KHR_DIAG: '" + word + "' is not a bit set from 1 to 7");
    bits.push_back(uint32_t(std::stoul(word)));
  }
  return bits;
}

// One VKF_BENCH_COOPMAT word: a table row, with values changed after slashes for tile sweeps
// (nv_coopmat2/bk32/wg128: nv_coopmat2 with k blocks of 32 and 128 invocations, row
// vkf_matmul_f16_nv_coopmat2_bk32_wg128; keys wg, bm, bn, bk, tm, tn, stages). A coopmat2
// row's block stays its tile; the other rows' workgroup follows from their blocks. An unknown
// row or key throws; a device that cannot run the result skips it, saying why
// (matmul_config_misfit).
vkf::ops::MatmulConfig coopmat_row(const std::string& word) {
  const size_t slash = word.find('/');
  vkf::ops::MatmulConfig c = vkf::ops::matmul_config(word.substr(0, slash));
  static const std::regex change(R"((wg|bm|bn|bk|tm|tn|stages)(\d{1,4}))");
  for (size_t at = slash; at != std::string::npos;) {
    const size_t next = word.find('/', at + 1);
    const std::string part = word.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    std::smatch m;
    if (!std::regex_match(part, m, change) || std::stoul(m[2]) == 0)
      throw std::runtime_error("VKF_BENCH_COOPMAT: '" + part + "' in '" + word +
                               "' is not a key (wg, bm, bn, bk, tm, tn, stages) and a number");
    const uint32_t v = uint32_t(std::stoul(m[2]));
    const std::string key = m[1];
    (key == "wg"   ? c.workgroup
     : key == "bm" ? c.bm
     : key == "bn" ? c.bn
     : key == "bk" ? c.bk
     : key == "tm" ? c.tm
     : key == "tn" ? c.tn
                   : c.stages) = v;
    at = next;
  }
  if (c.nv2) {
    c.tm = c.bm, c.tn = c.bn;
  } else {
    // One subgroup a tm x tn block (32 invocations counted for each, as the table's rows do).
    if (c.bm % c.tm || c.bn % c.tn)
      throw std::runtime_error("VKF_BENCH_COOPMAT: '" + word +
                               "': tm and tn must divide the tile (bm, bn)");
    c.workgroup = c.subgroups() * 32;
  }
  c.name = word;  // as a benchmark's name: slashes there separate its arguments
  std::replace(c.name.begin(), c.name.end(), '/', '_');
  return c;
}

// VKF_BENCH_COOPMAT's rows, kept for the life of the process (the benchmarks hold pointers).
std::vector<const vkf::ops::MatmulConfig*> coopmat_rows() {
  static std::deque<vkf::ops::MatmulConfig> kept;
  std::vector<const vkf::ops::MatmulConfig*> rows;
  for (const std::string& word : env_words("VKF_BENCH_COOPMAT"))
    rows.push_back(&kept.emplace_back(coopmat_row(word)));
  return rows;
}

// VKF_BENCH_SHAPES's shapes, or none where it is unset (a malformed one throws).
std::vector<vkf::bench::MatmulShape> listed_shapes() {
  static const std::regex shape(R"((\d{1,9})x(\d{1,9})x(\d{1,9}):(ab|abt|atb))");
  std::vector<vkf::bench::MatmulShape> shapes;
  for (const std::string& word : env_words("VKF_BENCH_SHAPES")) {
    std::smatch m;
    if (!std::regex_match(word, m, shape) || std::stoul(m[1]) == 0 || std::stoul(m[2]) == 0 ||
        std::stoul(m[3]) == 0)
      throw std::runtime_error("VKF_BENCH_SHAPES: '" + word +
                               "' is not <m>x<n>x<k>:<form> (sizes from 1, form ab, abt or atb)");
    const auto form = m[4] == "ab"    ? vkf::bench::MatmulForm::ab
                      : m[4] == "abt" ? vkf::bench::MatmulForm::abt
                                      : vkf::bench::MatmulForm::atb;
    shapes.push_back({uint32_t(std::stoul(m[1])), uint32_t(std::stoul(m[2])),
                      uint32_t(std::stoul(m[3])), form, "VKF_BENCH_SHAPES",
                      vkf::bench::Suite::full});
  }
  return shapes;
}

// VKF_BENCH_ROW_BLOCK's rows (0 where it is unset; anything but a positive count throws): the
// matmul split into dispatches of that many rows of A and C, within one buffer each, to tell a
// dispatch's size from its buffers' where a rate changes with m.
int64_t row_block() {
  const char* e = std::getenv("VKF_BENCH_ROW_BLOCK");
  if (e == nullptr || *e == 0) return 0;
  const std::string v = e;
  if (v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos || std::stol(v) == 0)
    throw std::runtime_error("VKF_BENCH_ROW_BLOCK: '" + v + "' is not a count of rows");
  return std::stol(v);
}

bool large(int64_t m, int64_t n, int64_t k) {
  return double(m) * n * k > 8e9;
}

bool skipped_large(int64_t m, int64_t n, int64_t k) {
  return large(m, n, k) && env_is("VKF_BENCH_SKIP_LARGE", "1");
}

bool skip(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  if (skipped_large(m, n, k)) {
    state.SkipWithError("skipped: VKF_BENCH_SKIP_LARGE=1");
    return true;
  }
  return false;
}

// The PyTorch side: every vkf row registered (with the name Google Benchmark gives it), and
// torch_matmul.py's figures for those the filter selects, from one run of it.
struct TorchRow {
  Case c;
  std::string name;
};

std::vector<TorchRow>& vkf_rows() {
  static std::vector<TorchRow> rows;
  return rows;
}

// Whether --benchmark_filter selects `name`, as Google Benchmark decides it (an extended regex
// searched in the name, a leading '-' negates, "" and "all" select everything).
bool selected(const std::string& name) {
  std::string spec = benchmark::GetBenchmarkFilter();
  if (spec.empty() || spec == "all") spec = ".";
  const bool negative = spec[0] == '-';
  if (negative) spec.erase(0, 1);
  try {
    return std::regex_search(name, std::regex(spec, std::regex::extended)) != negative;
  } catch (const std::regex_error&) {
    return true;
  }
}

struct TorchFigures {
  std::string backend;  // "torch 2.x on cuda:NVIDIA H100 ... cublas", "torch 1.13 on cpu ..."
  std::map<Case, double> gflops;
  std::map<Case, std::string> errors;  // e.g. fp16 matmul on a CPU build without it
};

const TorchFigures& torch_figures() {
  static const TorchFigures figures = [] {
    TorchFigures r;
    std::string shapes;
    std::set<Case> asked;  // a shape's f16 and forced tensor-core rows share one PyTorch figure
    for (const TorchRow& row : vkf_rows()) {
      const auto& [m, n, k, form, dtype] = row.c;
      if (!selected(row.name) || skipped_large(m, n, k) || !asked.insert(row.c).second) continue;
      if (dtype == vkf::DType::f16 && !shared().device->info().storage16) continue;
      if (!shapes.empty()) shapes += ',';
      for (int64_t d : {m, n, k}) shapes.append(std::to_string(d)).append("x");
      shapes.append(std::to_string(form)).append(":").append(vkf::dtype_name(dtype));
    }
    if (shapes.empty()) return r;
    const nlohmann::json j = vkf::bench::run_torch("torch_matmul.py --shapes " + shapes);
    if (j.is_null()) return r;
    r.backend = "torch " + j.value("torch", "?") + " on " + j.value("backend", "?");
    std::fprintf(stderr, "PyTorch side: %s\n", r.backend.c_str());
    try {
      for (const auto& e : j.value("results", nlohmann::json::array())) {
        const Case c{e.at("m").get<int64_t>(), e.at("n").get<int64_t>(), e.at("k").get<int64_t>(),
                     e.at("form").get<int64_t>(),
                     e.at("dtype").get<std::string>() == "f16" ? vkf::DType::f16 : vkf::DType::f32};
        if (e.contains("gflops"))
          r.gflops[c] = e["gflops"].get<double>();
        else
          r.errors[c] = e.value("error", "no figure");
      }
    } catch (const nlohmann::json::exception& e) {
      std::fprintf(stderr, "PyTorch side: unexpected JSON (%s)\n", e.what());
    }
    return r;
  }();
  return figures;
}

// The 4th argument is the form: 0 = A B, 1 = A B^T (a Linear's forward), 2 = A^T B (its
// weight gradient; A^T is not split into row blocks, so it must fit one binding).
// row: a tuning-table row forced for this benchmark (VKF_BENCH_COOPMAT), else forced_config().
// diagnostic: MatmulArgs::khr_diagnostic (VKF_BENCH_KHR_DIAG).
// The weight gradient's form gets a split-k workspace, as the model gives it (MatmulArgs::
// workspace), unless `split` is false (the _nosplit rows, for the ratio).
void bm_vkf(benchmark::State& state, vkf::DType dtype, const vkf::ops::MatmulConfig* row = nullptr,
            uint32_t diagnostic = 0, bool split = true) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int64_t form = state.range(3);
  const bool trans_a = form == 2, trans_b = form == 1;
  if (skip(state, m, n, k)) return;
  vkf::Device& dev = *shared().device;
  if (dtype == vkf::DType::f16 && !dev.info().storage16) {
    state.SkipWithError(
        ("skipped: " + dev.info().name + " has no 16-bit storage (storageBuffer16BitAccess)")
            .c_str());
    return;
  }
  const TorchFigures& torch = torch_figures();  // before this row's buffers: PyTorch runs alone
  const int64_t esize = vkf::dtype_bytes(dtype);
  std::vector<vkf::Buffer> buffers;  // B, then A and C of each row block; as long as seq lives
  std::optional<vkf::Sequence> seq;
  uint32_t slices = 1;  // split-k's
  try {
    // C (and A) are split into row blocks that each fit one storage-buffer binding
    // (maxStorageBufferRange is 128 MiB on lavapipe: the vocabulary projection's C is 578 MiB).
    const uint64_t max_bytes = std::min<uint64_t>(dev.info().max_storage_buffer_range, 1ull << 30);
    const int64_t rows =
        trans_a ? m : std::min<int64_t>(m, int64_t(max_bytes / (esize * std::max(n, k))));
    // VKF_BENCH_ROW_BLOCK: dispatches of that many rows within one A and one C.
    const int64_t block = trans_a ? 0 : row_block();
    if (block > 0 && rows < m) {
      state.SkipWithError("skipped: VKF_BENCH_ROW_BLOCK needs A and C each in one binding");
      return;
    }
    buffers.push_back(dev.allocate(k * n * esize, "B"));
    upload_as(dev, buffers.back(), random_floats(k * n, 2), dtype);
    const vkf::BufferRef b = buffers.back();
    vkf::BufferRef whole_a, whole_c;
    if (block > 0) {
      buffers.push_back(dev.allocate(m * k * esize, "A"));
      whole_a = buffers.back();
      upload_as(dev, whole_a, random_floats(m * k, 1), dtype);
      buffers.push_back(dev.allocate(m * n * esize, "C"));
      whole_c = buffers.back();
    }
    std::vector<vkf::ops::MatmulArgs> blocks;
    const int64_t step = block > 0 ? block : rows;
    for (int64_t m0 = 0; m0 < m; m0 += step) {
      const int64_t mc = std::min(step, m - m0);
      vkf::ops::MatmulArgs args;
      if (block > 0) {
        args.a = whole_a.slice(m0 * k * esize, mc * k * esize);
        args.c = whole_c.slice(m0 * n * esize, mc * n * esize);
      } else {
        buffers.push_back(dev.allocate(mc * k * esize, "A"));
        upload_as(dev, buffers.back(), random_floats(mc * k, uint32_t(1 + m0)), dtype);
        args.a = buffers.back();
        buffers.push_back(dev.allocate(mc * n * esize, "C"));
        args.c = buffers.back();
      }
      args.b = b;
      args.m = uint32_t(mc), args.n = uint32_t(n), args.k = uint32_t(k);
      args.trans_a = trans_a;
      args.trans_b = trans_b;
      args.dtype = dtype;
      args.config = row ? row : forced_config();
      args.khr_diagnostic = diagnostic;
      if (trans_a && !split) args.split_k = 1;
      if (const vkf::ops::SplitK plan = vkf::ops::matmul_split_k(dev, args, true);
          trans_a && plan.slices > 1) {
        buffers.push_back(dev.allocate(plan.workspace_bytes, "split-k workspace"));
        args.workspace = buffers.back();
        slices = plan.slices;
      }
      blocks.push_back(args);
    }
    vkf::Recorder rec(dev, vkf::bench::timed_recorder(dev));
    for (const vkf::ops::MatmulArgs& args : blocks) vkf::ops::matmul(dev, rec, args);
    seq.emplace(rec.finish());
    seq->run();  // warm-up: pipeline creation and first-touch of memory
  } catch (const std::exception& e) {
    // A forced row that this device or dtype refuses (nvidia_coopmat with f32), or memory.
    state.SkipWithError((std::string("skipped: ") + e.what()).c_str());
    return;
  }
  double seconds = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) seconds += vkf::bench::timed_run(*seq);  // GPU: by its timestamps
  state.counters["timestamps"] = seq->timings().empty() ? 0 : 1;
  const double flops = 2.0 * m * n * k;
  vkf::bench::report_against_peak(state, dev, flops, seconds, vkf::bench::Rate::flops);
  state.counters["GFLOP/cpu_s"] =
      flops * double(state.iterations()) * 1e-9 / (process_cpu_seconds() - cpu0);
  const auto* forced = row ? row : forced_config();
  const vkf::ops::MatmulConfig config =
      forced ? *forced
             : vkf::ops::choose_matmul(
                   dev, vkf::ops::MatmulProblem{dtype, trans_a, trans_b, uint32_t(m), uint32_t(n),
                                                uint32_t(k)})
                   .config;
  std::string label = dev.info().name + " config=" + config.name +
                      " dispatches=" + std::to_string(seq->dispatch_count());
  if (!trans_a && row_block() > 0) label += " row_block=" + std::to_string(row_block());
  if (slices > 1) label += " split_k=" + std::to_string(slices);
  if (!forced && dev.tuning()) label += " tuned=" + config.describe();
  if (seconds <= 0) {
    state.SetLabel(label);
    return;
  }
  const double gflops = flops * double(state.iterations()) / seconds * 1e-9;
  auto it = shared().openblas_gflops.find({m, n, k, form});
  if (dtype == vkf::DType::f32 && it != shared().openblas_gflops.end())
    state.counters["ratio_openblas"] = gflops / it->second;
  if (diagnostic) label += " diagnostic=" + std::to_string(diagnostic) + " (results wrong)";
  if (dtype == vkf::DType::f16 && row == nullptr && split)
    shared().f16_gflops[{m, n, k, form}] = gflops;
  if (auto f = shared().f16_gflops.find({m, n, k, form});
      (row || !split) && f != shared().f16_gflops.end())
    state.counters["ratio_f16"] = gflops / f->second;
  const Case c{m, n, k, form, dtype};
  if (auto t = torch.gflops.find(c); t != torch.gflops.end()) {
    state.counters["torch_GFLOP/s"] = t->second;
    state.counters["ratio_torch"] = gflops / t->second;
    label += " vs " + torch.backend;
  } else if (auto err = torch.errors.find(c); err != torch.errors.end()) {
    label += " vs " + torch.backend + ", which failed: " + err->second;
  }
  state.SetLabel(label);
}

#ifdef VKF_HAVE_OPENBLAS
void bm_openblas(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int64_t form = state.range(3);
  const bool trans_a = form == 2, trans_b = form == 1;
  if (skip(state, m, n, k)) return;
  auto a = random_floats(m * k, 1), b = random_floats(k * n, 2);
  std::vector<float> c(m * n);
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a.data(),
                trans_a ? int(m) : int(k), b.data(), trans_b ? int(k) : int(n), 0.0f, c.data(),
                int(n));
  };
  call();  // warm-up: thread pool start, first touch
  double seconds = 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(c.data());
  }
  const double flops = 2.0 * m * n * k;
  if (seconds > 0) state.counters["GFLOP/s"] = flops * double(state.iterations()) / seconds * 1e-9;
  state.counters["GFLOP/cpu_s"] =
      flops * double(state.iterations()) * 1e-9 / (process_cpu_seconds() - cpu0);
  if (seconds > 0)
    shared().openblas_gflops[{m, n, k, form}] = flops * state.iterations() / seconds * 1e-9;
  state.SetLabel("threads=" + std::to_string(openblas_get_num_threads()));
}
#endif

// Registers one vkf row at shape s and records the name Google Benchmark gives it (for
// --benchmark_filter, see selected()).
void add_vkf_row(const std::string& name, const std::vector<int64_t>& s, bool big, vkf::DType dtype,
                 std::function<void(benchmark::State&)> fn) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), std::move(fn))
                ->Args(s)
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
  if (big) b->Iterations(1);
  std::string full = name;
  for (int64_t a : s) full.append("/").append(std::to_string(a));
  vkf_rows().push_back(
      {{s[0], s[1], s[2], s[3], dtype}, full + (big ? "/iterations:1" : "") + "/real_time"});
}

void register_all() {
  // The shapes (and which get f16 rows) are apps/vkf/bench/shapes.h's, shared with `vkf bench`,
  // unless VKF_BENCH_SHAPES lists others.
  const std::vector<const vkf::ops::MatmulConfig*> coopmats = coopmat_rows();
  const std::vector<uint32_t> diagnostics = khr_diagnostics();
  const std::vector<vkf::bench::MatmulShape> listed = listed_shapes();
  row_block();  // a malformed VKF_BENCH_ROW_BLOCK stops the program here, not each row
  const auto standard = vkf::bench::matmul_shapes();
  const std::vector<vkf::bench::MatmulShape> shapes =
      listed.empty() ? std::vector(standard.begin(), standard.end()) : listed;
  for (const vkf::bench::MatmulShape& shape : shapes) {
    const std::vector<int64_t> s = {shape.m, shape.n, shape.k, int64_t(shape.form)};
    // Large shapes take seconds a call on a CPU device: one timed call each there (OpenBLAS
    // too); a GPU takes milliseconds, so Google Benchmark's own iteration count applies.
    const bool big = large(s[0], s[1], s[2]) && shared().device->info().is_cpu();
#ifdef VKF_HAVE_OPENBLAS
    auto* o = benchmark::RegisterBenchmark("openblas_sgemm", bm_openblas)
                  ->Args(s)
                  ->UseRealTime()
                  ->Unit(benchmark::kMillisecond);
    if (big) o->Iterations(1);
#endif
    for (const vkf::DType dtype : {vkf::DType::f32, vkf::DType::f16}) {
      if (dtype == vkf::DType::f16 && listed.empty() && !env_is("VKF_BENCH_F16_ALL", "1") &&
          !vkf::bench::f16_by_default(shape))
        continue;
      const std::string name = std::string("vkf_matmul_") + vkf::dtype_name(dtype);
      add_vkf_row(name, s, big, dtype, [dtype](benchmark::State& st) { bm_vkf(st, dtype); });
      if (shape.form == vkf::bench::MatmulForm::atb)
        add_vkf_row(name + "_nosplit", s, big, dtype,
                    [dtype](benchmark::State& st) { bm_vkf(st, dtype, nullptr, 0, false); });
      if (dtype != vkf::DType::f16) continue;
      for (const vkf::ops::MatmulConfig* row : coopmats) {
        std::vector<uint32_t> variants = {0};
        if (row->khr) variants.insert(variants.end(), diagnostics.begin(), diagnostics.end());
        for (uint32_t diag : variants)
          add_vkf_row(
              name + "_" + row->name + (diag ? "_diag" + std::to_string(diag) : ""), s, big, dtype,
              [row, diag](benchmark::State& st) { bm_vkf(st, vkf::DType::f16, row, diag); });
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  vkf::bench::openblas_without_old_cpu_overrides(argv);
  try {
    register_all();
  } catch (const std::exception& e) {  // a bad VKF_BENCH_* value, no device
    std::fprintf(stderr, "bench_matmul: %s\n", e.what());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
