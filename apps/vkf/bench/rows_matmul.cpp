// Matmul rows: fp32, fp16 storage (fp32 arithmetic) and the cooperative-matrix (tensor core)
// rows of the tuning table, at the shapes of apps/vkf/bench/shapes.h. The timed output is checked:
// 8 sampled rows of C (every column) against reference/matmul, through the matmul harness
// (reference/matmul_case.h) that the shader tests and the tuner's check run too.
#include <algorithm>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/matmul.h"
#include "engine/ops/matmul_tuning.h"
#include "reference/matmul_case.h"

namespace vkf::bench {
namespace {

void matmul_row(Context& cx, Row& row, const MatmulShape& s, DType dtype,
                const ops::MatmulConfig* forced) {
  Device& dev = cx.dev;
  const DeviceInfo& info = dev.info();
  if (dtype == DType::f16 && !info.storage16)
    throw Refused("no 16-bit storage (storageBuffer16BitAccess)");
  if (forced && forced->coopmat && !ops::matmul_coopmat_built())
    throw Refused("this build has no cooperative-matrix kernel (glslc lacked the extension)");
  if (forced)
    if (std::string why = ops::matmul_config_misfit(*forced, info); !why.empty())
      throw Refused(why);
  const bool trans_a = s.form == MatmulForm::atb, trans_b = s.form == MatmulForm::abt;
  const uint64_t esize = dtype_bytes(dtype), m = s.m, n = s.n, k = s.k;
  const uint64_t max_bytes = std::min<uint64_t>(info.max_storage_buffer_range, 1ull << 30);
  const uint32_t rows_per_block =
      trans_a ? s.m : uint32_t(std::min<uint64_t>(m, max_bytes / (esize * std::max(n, k))));
  if (rows_per_block == 0 || k * n * esize > max_bytes)
    throw Refused("B does not fit one storage-buffer binding");

  // The matmul harness (reference/matmul_case.h) draws the inputs as stored, poisons C and
  // records the kernels; C is cut into row blocks that each fit one storage-buffer binding
  // (lavapipe binds 128 MiB; the 25000-token vocabulary projection's C is 3.7 GB). The weight
  // gradient's form gets a split-k workspace, as training gives it.
  ref::MatmulCase c;
  c.m = s.m, c.n = s.n, c.k = s.k;
  c.trans_a = trans_a, c.trans_b = trans_b;
  c.dtype = dtype;
  c.config = forced;
  c.split_k = trans_a ? 0 : 1;
  c.block_rows = rows_per_block < s.m ? rows_per_block : 0;
  const ref::MatmulRun run(dev, c, cx.rng);
  Recorder rec(dev, timed_recorder(dev));
  run.record(rec, cx.sabotage(row.id) ? k_wrong_bits : 0);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  // 8 rows of C, every column, against the double-precision reference.
  const Comparison cmp =
      run.compare_rows(sample_indices(cx.rng, s.m, 8), ref::matmul_tolerance(dtype));
  const uint32_t slices = run.split().slices;
  // Which kernel ran, and why (the same function ops::matmul asked).
  const ops::MatmulChoice choice =
      forced ? ops::MatmulChoice{*forced, ops::MatmulSource::forced, "forced by the row"}
             : ops::choose_matmul(dev, ops::MatmulProblem{dtype, trans_a, trans_b, s.m, s.n, s.k});
  set_check(row, {cmp},
            "kernel " + choice.config.name + " (" + choice.why + ")" +
                (slices > 1 ? ", k split in " + std::to_string(slices) : std::string()) +
                ", 8 sampled rows of the timed output");
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const Basis basis = forced && forced->coopmat ? Basis::fp16_fma : Basis::fp32_fma;
  set_timing(row, cx, time_runs(seq, cx.repeats(first)), flops, "GFLOP/s", basis);
}

const char* form_id(MatmulForm f) {
  return f == MatmulForm::ab ? "AB" : f == MatmulForm::abt ? "ABt" : "AtB";
}

RowSpec spec(const MatmulShape& s, DType dtype, const ops::MatmulConfig* forced) {
  const std::string kind = forced ? std::string("coopmat:") + forced->name : dtype_name(dtype);
  const std::string dims =
      std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  const std::string what = forced ? std::string(forced->name) + " (fp16 in, fp32 accumulation)"
                           : dtype == DType::f16 ? "f16 storage"
                                                 : "f32";
  return {"matmul/" + kind + "/" + dims + "/" + form_id(s.form), "matmul",
          "matmul " + what + " " + dims + " " + form_name(s.form) + " (" + s.role + ")",
          [s, dtype, forced](Context& cx, Row& r) { matmul_row(cx, r, s, dtype, forced); }};
}

}  // namespace

std::vector<RowSpec> matmul_rows(Suite suite) {
  std::vector<RowSpec> rows;
  for (const MatmulShape& s : matmul_shapes()) {
    if (s.suite > suite) continue;
    rows.push_back(spec(s, DType::f32, nullptr));
    if (!f16_by_default(s) && suite != Suite::full) continue;
    rows.push_back(spec(s, DType::f16, nullptr));
    for (const ops::MatmulConfig& c : ops::matmul_configs())
      if (c.coopmat) rows.push_back(spec(s, DType::f16, &c));
  }
  return rows;
}

}  // namespace vkf::bench
