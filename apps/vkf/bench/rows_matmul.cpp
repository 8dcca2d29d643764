// Matmul rows: fp32, fp16 storage (fp32 arithmetic) and the cooperative-matrix (tensor core)
// rows of the tuning table, at the shapes of apps/vkf/bench/shapes.h. The timed output is checked:
// 8 sampled rows of C (every column) against a double-precision dot product of the same inputs.
#include <algorithm>
#include <cmath>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/ops/matmul.h"
#include "engine/ops/matmul_tuning.h"

namespace vkf::bench {
namespace {

// C is split into row blocks that each fit one storage-buffer binding (lavapipe binds 128 MiB;
// the 25000-token vocabulary projection's C is 3.7 GB).
struct Block {
  uint32_t m0, rows;
  Buffer a, c;
};

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

  // Inputs uniform in [-1, 1), rounded to fp16 where stored so: the reference sees what the
  // kernel reads. A is [m, k] ([k, m] when transposed), B is [k, n] ([n, k] when transposed).
  auto rounded = [&](std::vector<float> v) { return ref::stored(std::move(v), dtype); };
  const std::vector<float> b_host = rounded(uniform(cx.rng, k * n));
  Buffer b = dev.allocate(k * n * esize, "B");
  ref::upload_stored(dev, b, b_host, dtype);
  std::vector<float> a_host(m * k);
  std::vector<Block> blocks;
  for (uint32_t m0 = 0; m0 < s.m; m0 += rows_per_block) {
    const uint32_t mc = std::min<uint32_t>(rows_per_block, s.m - m0);
    std::vector<float> a = rounded(uniform(cx.rng, uint64_t{mc} * k));
    std::copy(a.begin(), a.end(), a_host.begin() + int64_t(m0 * k));
    Block blk{m0, mc, dev.allocate(uint64_t{mc} * k * esize, "A"),
              dev.allocate(uint64_t{mc} * n * esize, "C")};
    ref::upload_stored(dev, blk.a, a, dtype);
    blocks.push_back(std::move(blk));
  }
  Recorder rec(dev, timed_recorder(dev));
  // The weight gradient's form gets a split-k workspace, as training gives it.
  Buffer workspace;
  uint32_t slices = 1;
  for (const Block& blk : blocks) {
    ops::MatmulArgs args;
    args.a = blk.a;
    args.b = b;
    args.c = blk.c;
    args.m = blk.rows, args.n = s.n, args.k = s.k;
    args.trans_a = trans_a;
    args.trans_b = trans_b;
    args.dtype = dtype;
    args.config = forced;
    if (const ops::SplitK plan = ops::matmul_split_k(dev, args, true); trans_a && plan.slices > 1) {
      workspace = dev.allocate(plan.workspace_bytes, "split-k workspace");
      args.workspace = workspace;
      slices = plan.slices;
    }
    ops::matmul(dev, rec, args);
  }
  if (cx.sabotage(row.id)) rec.fill(blocks[0].c.ref().slice(0, 4), k_wrong_bits);
  Sequence seq = rec.finish();
  const double first = timed_run(seq);

  // 8 rows of C, every column, in double.
  const double atol = dtype == DType::f32 ? 1e-6 : 1e-5, rtol = dtype == DType::f32 ? 2e-4 : 4e-3;
  Comparison cmp("C");
  for (uint32_t i : sample_indices(cx.rng, s.m, 8)) {
    const Block& blk = blocks[i / rows_per_block];
    const uint64_t local = i - blk.m0;
    const std::vector<float> got =
        ref::download_stored(dev, blk.c.ref().slice(local * n * esize, n * esize), n, dtype);
    for (uint64_t j = 0; j < n; ++j) {
      double sum = 0, scale = 0;
      for (uint64_t kk = 0; kk < k; ++kk) {
        const double av = trans_a ? a_host[kk * m + i] : a_host[uint64_t{i} * k + kk];
        const double bv = trans_b ? b_host[j * k + kk] : b_host[kk * n + j];
        sum += av * bv;
        scale += std::fabs(av * bv);
      }
      cmp.add(got[j], sum, scale, atol, rtol);
    }
  }
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
