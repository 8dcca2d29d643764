// LayerNorm forward/backward (plain and post-LN residual + dropout) against the double reference,
// every workgroup size and reduction path forced, in f32 and f16 storage, plus finite
// differences of the reference.
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "engine/ops/layer_norm.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/philox.h"
#include "engine/step_scalars.h"
#include "engine/tuning.h"
#include "reference/layer_norm.h"
#include "tests/support/bare_device.h"
#include "tests/support/f16_storage.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

constexpr double k_eps = 1e-6;

std::vector<float> poisoned(size_t n, DType t = DType::f32) {
  return std::vector<float>(n, test::poison(t));
}

Buffer step_buffer(Device& dev, uint32_t seed, uint32_t step, uint32_t dropout_row = 0) {
  Buffer b = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.seed = seed;
  st.step = step;
  st.dropout_row = dropout_row;
  std::memcpy(b.mapped(), &st, sizeof st);
  return b;
}

Buffer upload(Device& dev, const std::vector<float>& v, const char* what, DType t = DType::f32) {
  return test::upload_stored(dev, v, t, what);
}

std::vector<float> download(Device& dev, const Buffer& b, size_t n, DType t = DType::f32) {
  return test::download_stored(dev, b, n, t);
}

using test::has_storage16;
using test::stored;

struct Case {
  uint32_t rows, d;
  bool residual;
  float p;
  uint32_t wg;
  ops::RowReduce reduce;
  DType dtype = DType::f32;  // storage of x, s, y, h, dy, dx, ds
  ops::RowKernelConfig::Reads reads = ops::RowKernelConfig::Reads::automatic;
};

// Inputs for one case: x has an offset so that the variance pass must not cancel. The [rows, d]
// tensors hold values of the storage type (rounded to f16 for f16), so that the reference sees
// exactly what the kernels read.
struct Inputs {
  std::vector<float> x, s, gamma, beta, dy;
  Inputs(uint32_t rows, uint32_t d, uint32_t seed, DType t = DType::f32) {
    const size_t n = size_t{rows} * d;
    x = stored(test::random_floats(n, seed, 2.0f, 4.0f), t);
    s = stored(test::random_floats(n, seed + 1), t);
    gamma = test::random_floats(d, seed + 2, 0.5f, 1.5f);
    beta = test::random_floats(d, seed + 3);
    dy = stored(test::random_floats(n, seed + 4), t);
  }
};

// Tolerances (atol, rtol) of the outputs stored in the case's dtype; mean, rstd, dgamma and dbeta
// are fp32 computed from exactly the stored inputs, so theirs do not depend on it.
struct Tolerance {
  double atol, rtol;
};
struct Tolerances {
  Tolerance h;   // against the exact x + mask * s: the fp32 sum, then one rounding to storage
  Tolerance y;   // y is O(1)
  Tolerance dx;  // dx and ds sum over d
};
// fp32: the arithmetic's error. f16: one more rounding of the stored output (2^-11 relative),
// with headroom, on top of it.
constexpr Tolerances k_tol_f32{{1e-6, 1e-6}, {2e-5, 1e-4}, {5e-5, 1e-4}};
constexpr Tolerances k_tol_f16{{1e-6, 5e-4}, {1e-4, 1e-3}, {1e-4, 1e-3}};

struct GpuResult {
  std::vector<float> y, h, mean, rstd, dx, ds, dgamma, dbeta;
};

// share: the rows are sentences of share.len tokens that start at sentence share.first of a
// larger batch (StepScalars::dropout_row).
struct Share {
  uint32_t first = 0, len = 0;
};

GpuResult run_gpu(const Case& c, const Inputs& in, uint32_t seed, uint32_t step,
                  const std::vector<float>& dx0 = {}, const std::vector<float>& dparam0 = {},
                  Share share = {}) {
  Device& dev = test::device();
  const size_t n = size_t{c.rows} * c.d;
  const DType t = c.dtype;
  Buffer x = upload(dev, in.x, "x", t), s = upload(dev, in.s, "s", t);
  Buffer gamma = upload(dev, in.gamma, "gamma"), beta = upload(dev, in.beta, "beta");
  Buffer dy = upload(dev, in.dy, "dy", t);
  Buffer y = upload(dev, poisoned(n, t), "y", t), h = upload(dev, poisoned(n, t), "h", t);
  Buffer mean = upload(dev, poisoned(c.rows), "mean"), rstd = upload(dev, poisoned(c.rows), "rstd");
  Buffer dx = upload(dev, dx0.empty() ? poisoned(n, t) : dx0, "dx", t);
  Buffer ds = upload(dev, poisoned(n, t), "ds", t);
  Buffer dgamma = upload(dev, dparam0.empty() ? poisoned(c.d) : dparam0, "dgamma");
  Buffer dbeta = upload(dev, dparam0.empty() ? poisoned(c.d) : dparam0, "dbeta");
  Buffer scratch = dev.allocate(ops::layer_norm_backward_scratch_bytes(c.rows, c.d), "scratch");
  dev.upload(scratch, poisoned(scratch.size() / 4));
  Buffer st = step_buffer(dev, seed, step, share.first);

  Recorder rec(dev);
  ops::LayerNormForwardArgs f;
  f.dtype = t;
  f.x = x;
  if (c.residual) {
    f.s = s;
    f.h = h;
  }
  f.gamma = gamma;
  f.beta = beta;
  f.y = y;
  f.mean = mean;
  f.rstd = rstd;
  f.step = st;
  f.rows = c.rows;
  f.d = c.d;
  f.eps = float(k_eps);
  f.dropout = c.p;
  f.tensor_id = 7;
  f.batch_row_rows = share.len;
  f.workgroup_size = c.wg;
  f.reduce = c.reduce;
  f.reads = c.reads;
  ops::layer_norm_forward(dev, rec, f);

  ops::LayerNormBackwardArgs b;
  b.dtype = t;
  b.dy = dy;
  b.h = c.residual ? h : x;
  b.gamma = gamma;
  b.mean = mean;
  b.rstd = rstd;
  b.dx = dx;
  if (c.residual) b.ds = ds;
  b.dgamma = dgamma;
  b.dbeta = dbeta;
  b.scratch = scratch;
  b.step = st;
  b.rows = c.rows;
  b.d = c.d;
  b.dropout = c.p;
  b.tensor_id = 7;
  b.batch_row_rows = share.len;
  b.accumulate_dx = !dx0.empty();
  b.accumulate_params = !dparam0.empty();
  b.workgroup_size = c.wg;
  b.reduce = c.reduce;
  b.reads = c.reads;
  ops::layer_norm_backward(dev, rec, b);
  rec.finish().run();

  GpuResult r;
  r.y = download(dev, y, n, t);
  if (c.residual) r.h = download(dev, h, n, t);
  r.mean = download(dev, mean, c.rows);
  r.rstd = download(dev, rstd, c.rows);
  r.dx = download(dev, dx, n, t);
  if (c.residual) r.ds = download(dev, ds, n, t);
  r.dgamma = download(dev, dgamma, c.d);
  r.dbeta = download(dev, dbeta, c.d);
  return r;
}

std::vector<double> plus(std::vector<double> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

void check_case(const Case& c, uint32_t seed) {
  INFO("rows " << c.rows << " d " << c.d << " residual " << c.residual << " p " << c.p << " wg "
               << c.wg << " reduce " << int(c.reduce) << " " << dtype_name(c.dtype) << " reads "
               << int(c.reads));
  Inputs in(c.rows, c.d, seed, c.dtype);
  const uint32_t n = c.rows * c.d;
  const Tolerances& tol = c.dtype == DType::f16 ? k_tol_f16 : k_tol_f32;
  auto mask = c.residual ? ref::dropout_mask(n, c.p, 99, 3, 7) : std::vector<double>{};
  auto s = c.residual ? ref::to_double(in.s) : std::vector<double>{};
  auto x = ref::to_double(in.x), gamma = ref::to_double(in.gamma);
  // Accumulating into non-zero gradients checks the += paths at the same time.
  const bool acc = seed % 2 == 1;
  auto dx0 = acc ? stored(test::random_floats(n, seed + 10), c.dtype) : std::vector<float>{};
  auto dp0 = acc ? test::random_floats(c.d, seed + 11) : std::vector<float>{};
  GpuResult got = run_gpu(c, in, 99, 3, dx0, dp0);

  // h = x + mask * s is one rounding (to fp32, or to f16) away from the exact sum, and a row
  // whose values nearly agree magnifies that by rstd. So h is checked against the exact sum, and
  // the normalisation and its gradients against the reference evaluated at the kernel's h.
  auto beta = ref::to_double(in.beta), dy = ref::to_double(in.dy);
  if (c.residual) {
    auto exact = ref::layer_norm_forward(x, s, mask, gamma, beta, c.rows, c.d, k_eps);
    CHECK(test::tolerance_ratio(got.h, exact.h, tol.h.atol, tol.h.rtol) <= 1.0);
  }
  auto h = c.residual ? ref::to_double(got.h) : x;
  auto want = ref::layer_norm_forward(h, {}, {}, gamma, beta, c.rows, c.d, k_eps);
  auto grads = ref::layer_norm_backward(dy, h, {}, {}, gamma, c.rows, c.d, k_eps);
  if (c.residual) {  // ds = dh * mask, the chain rule through h = x + mask * s
    grads.ds = grads.dx;
    for (uint32_t i = 0; i < n; ++i) grads.ds[i] *= mask[i];
  }

  // y and dx as above; fp32 statistics and dgamma, dbeta (sums over rows) in any dtype.
  CHECK(test::tolerance_ratio(got.y, want.y, tol.y.atol, tol.y.rtol) <= 1.0);
  CHECK(test::tolerance_ratio(got.mean, want.mean, 1e-5, 1e-5) <= 1.0);
  CHECK(test::tolerance_ratio(got.rstd, want.rstd, 1e-5, 1e-4) <= 1.0);
  auto want_dx = acc ? plus(grads.dx, dx0) : grads.dx;
  auto want_dg = acc ? plus(grads.dgamma, dp0) : grads.dgamma;
  auto want_db = acc ? plus(grads.dbeta, dp0) : grads.dbeta;
  CHECK(test::tolerance_ratio(got.dx, want_dx, tol.dx.atol, tol.dx.rtol) <= 1.0);
  if (c.residual) {
    CHECK(test::tolerance_ratio(got.ds, grads.ds, tol.dx.atol, tol.dx.rtol) <= 1.0);
    for (uint32_t i = 0; i < n; ++i)
      if (mask[i] == 0.0) REQUIRE(got.ds[i] == 0.0f);  // the forward's mask, exactly
  }
  CHECK(test::tolerance_ratio(got.dgamma, want_dg, 1e-4, 1e-4) <= 1.0);
  CHECK(test::tolerance_ratio(got.dbeta, want_db, 1e-4, 1e-4) <= 1.0);
}

}  // namespace

VKF_TEST_CASE("layer_norm forward and backward match the reference", "[shaders][layer_norm]") {
  auto [rows, d] = GENERATE(table<uint32_t, uint32_t>(
      {{1, 1}, {3, 7}, {5, 64}, {4, 100}, {3, 513}, {2, 1024}, {2, 4096}, {70, 33}}));
  uint32_t seed = rows * 131 + d;
  for (bool residual : {false, true})
    for (auto reads : {ops::RowKernelConfig::Reads::automatic, ops::RowKernelConfig::Reads::texel})
      check_case({rows, d, residual, residual ? 0.25f : 0.0f, 0, ops::RowReduce::automatic,
                  DType::f32, reads},
                 seed + residual);
}

// Every reduction path with every workgroup size and both ways of reading, in storage type t.
// With 4 invocations a row of 513 columns is longer than the runs a lane keeps in registers.
void check_every_path(ops::RowReduce reduce, DType t) {
  if (reduce != ops::RowReduce::shared && !test::device().info().subgroup_arithmetic) return;
  using Reads = ops::RowKernelConfig::Reads;
  for (Reads reads : {Reads::storage, Reads::texel})
    for (uint32_t wg : {4u, 32u, 64u, 128u, 256u}) {  // 4: a partial subgroup
      // The reads differ in their loads alone: texel views at two sizes spare Mesa 25's lavapipe
      // half a minute of compiling.
      if (reads == Reads::texel && wg != 4 && wg != 64) continue;
      for (auto [rows, d] : {std::pair{3u, 7u}, {2u, 513u}, {4u, 100u}})
        check_case({rows, d, true, 0.1f, wg, reduce, t, reads}, wg + d + rows);
    }
}

VKF_TEST_CASE("layer_norm: every workgroup size and reduction path", "[shaders][layer_norm]") {
  auto reduce =
      GENERATE(ops::RowReduce::shared, ops::RowReduce::subgroup, ops::RowReduce::subgroup_rows);
  check_every_path(reduce, DType::f32);
}

VKF_TEST_CASE("layer_norm with f16 storage matches the reference", "[shaders][layer_norm][f16]") {
  if (!has_storage16()) return;
  // One-row inputs, widths that no workgroup size (nor 4) divides, and a few random shapes.
  std::vector<std::pair<uint32_t, uint32_t>> shapes{{1, 1},   {1, 300},  {3, 7},  {4, 100},
                                                    {3, 513}, {2, 4096}, {70, 33}};
  std::mt19937 rng(2024);
  for (int i = 0; i < 4; ++i) shapes.push_back({1 + rng() % 40, 1 + rng() % 700});
  for (auto [rows, d] : shapes) {
    uint32_t seed = rows * 131 + d;
    check_case({rows, d, false, 0.0f, 0, ops::RowReduce::automatic, DType::f16}, seed);
    check_case({rows, d, true, 0.0f, 0, ops::RowReduce::automatic, DType::f16}, seed + 1);
    check_case({rows, d, true, 0.25f, 0, ops::RowReduce::automatic, DType::f16}, seed + 2);
  }
}

VKF_TEST_CASE("layer_norm with f16 storage: every workgroup size and reduction path",
              "[shaders][layer_norm][f16]") {
  auto reduce =
      GENERATE(ops::RowReduce::shared, ops::RowReduce::subgroup, ops::RowReduce::subgroup_rows);
  if (has_storage16()) check_every_path(reduce, DType::f16);
}

// The statistics of a residual row come from h as stored. With d = 1 the mean is h itself, bit
// for bit, and y = beta; the sums below round to f16 (ties to even, one carrying into the
// exponent). Mesa 25.0.7's lavapipe handed the kernel the unrounded fp32 sum when it read back
// the f16 h it had just stored (shaders/common/f16_round.glsl): the mean was x + s, not h, and
// y missed beta by 525 tolerances. Every reduction path, with and without dropout.
VKF_TEST_CASE("layer_norm f16 statistics use h as stored", "[shaders][layer_norm][f16]") {
  if (!has_storage16()) return;
  // (x, s) pairs of f16 values whose fp32 sum is exact; it is then rounded once, to f16.
  std::vector<std::pair<float, float>> pairs{
      {1.0f + 1 / 1024.0f, 1 / 2048.0f},   // a tie, rounded up to the even neighbour
      {1.0f + 2 / 1024.0f, 1 / 2048.0f},   // a tie, rounded down
      {2.0f - 1 / 1024.0f, 1 / 2048.0f},   // a tie that carries into the exponent
      {-3.0f - 3 / 512.0f, -1 / 1024.0f},  // negative, a tie
      {3.0f, 0.0099945068359375f}};        // 3.0099945 rounds to 3.0097656
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> mag(0.1f, 8.0f), small(-0.06f, 0.06f);
  for (int i = 0; i < 59; ++i) pairs.push_back({(rng() % 2 ? -1 : 1) * mag(rng), small(rng)});
  const uint32_t rows = uint32_t(pairs.size());
  Inputs in(rows, 1, 5, DType::f16);
  for (uint32_t r = 0; r < rows; ++r) {
    in.x[r] = pairs[r].first;
    in.s[r] = pairs[r].second;
  }
  in.x = stored(in.x, DType::f16);
  in.s = stored(in.s, DType::f16);
  std::vector<float> sums(rows);
  for (uint32_t r = 0; r < rows; ++r) sums[r] = in.x[r] + in.s[r];
  const std::vector<float> want_h = stored(sums, DType::f16);
  const std::vector<float> want_y = stored(in.beta, DType::f16);
  for (auto reduce :
       {ops::RowReduce::shared, ops::RowReduce::subgroup, ops::RowReduce::subgroup_rows})
    for (float p : {0.0f, 0.25f}) {
      if (reduce != ops::RowReduce::shared && !test::device().info().subgroup_arithmetic) continue;
      INFO("reduce " << int(reduce) << " p " << p);
      const GpuResult got = run_gpu({rows, 1, true, p, 0, reduce, DType::f16}, in, 99, 3);
      const auto mask = ref::dropout_mask(rows, p, 99, 3, 7);
      for (uint32_t r = 0; r < rows; ++r) {
        INFO("row " << r << ": x " << in.x[r] << " s " << in.s[r] << " mask " << mask[r]);
        if (p == 0.0f) REQUIRE(got.h[r] == want_h[r]);  // the exact sum, rounded once
        REQUIRE(got.mean[r] == got.h[r]);
        REQUIRE(got.y[r] == want_y[0]);
      }
    }
}

// The f16 kernels do the f32 kernels' arithmetic on the values they load: run on the same
// rounded inputs (in residual mode, the f32 kernels run in plain mode on the h the f16 forward
// stored), the fp32 outputs agree to fp32 rounding and the f16 outputs are the f32 ones rounded
// to f16 (within one f16 ulp: 2^-10 relative, or 2^-24 below the normal range).
VKF_TEST_CASE("layer_norm with f16 storage agrees with f32 on the same inputs",
              "[shaders][layer_norm][f16]") {
  auto reduce =
      GENERATE(ops::RowReduce::shared, ops::RowReduce::subgroup, ops::RowReduce::subgroup_rows);
  if (reduce != ops::RowReduce::shared && !test::device().info().subgroup_arithmetic) return;
  if (!has_storage16()) return;
  for (auto [rows, d] : {std::pair{1u, 37u}, {5u, 300u}})
    for (bool residual : {false, true}) {
      INFO("rows " << rows << " d " << d << " residual " << residual << " reduce " << int(reduce));
      const uint32_t n = rows * d;
      const float p = residual ? 0.25f : 0.0f;
      Inputs in(rows, d, rows + d, DType::f16);
      GpuResult half = run_gpu({rows, d, residual, p, 0, reduce, DType::f16}, in, 99, 3);
      if (residual) in.x = half.h;
      GpuResult full = run_gpu({rows, d, false, 0.0f, 0, reduce, DType::f32}, in, 99, 3);

      auto same = [](const std::vector<float>& got, const std::vector<float>& want) {
        return test::tolerance_ratio(got, ref::to_double(want), 1e-7, 1e-6) <= 1.0;
      };
      auto rounded = [](const std::vector<float>& got, const std::vector<float>& want) {
        return test::tolerance_ratio(got, ref::to_double(want), 6e-8, 1e-3) <= 1.0;
      };
      CHECK(same(half.mean, full.mean));
      CHECK(same(half.rstd, full.rstd));
      CHECK(same(half.dgamma, full.dgamma));
      CHECK(same(half.dbeta, full.dbeta));
      CHECK(rounded(half.y, full.y));
      CHECK(rounded(half.dx, full.dx));
      if (residual) {  // ds = dh * mask, with the f32 kernels' dh = dx
        std::vector<float> want(n);
        for (uint32_t i = 0; i < n; ++i) want[i] = full.dx[i] * dropout_scale(p, 99, 3, 7, i);
        CHECK(rounded(half.ds, want));
      }
    }
}

VKF_TEST_CASE("layer_norm on a share of a batch drops what the whole batch would",
              "[shaders][layer_norm][dropout]") {
  // 5 sentences of 3 tokens; d = 37, so a sentence's mask does not start on a Philox block.
  const uint32_t sentences = 5, len = 3, d = 37, first = 2, count = 2;
  for (ops::RowReduce reduce : {ops::RowReduce::shared, ops::RowReduce::subgroup_rows}) {
    if (reduce == ops::RowReduce::subgroup_rows && !test::device().info().subgroup_arithmetic)
      continue;
    const Case whole{sentences * len, d, true, 0.3f, 64, reduce};
    const Inputs in(whole.rows, d, 11);
    const GpuResult all = run_gpu(whole, in, 5, 9);
    Case part = whole;
    part.rows = count * len;
    Inputs sub = in;
    const size_t lo = size_t{first} * len * d, hi = lo + size_t{part.rows} * d;
    for (auto* v : {&sub.x, &sub.s, &sub.dy})
      *v = std::vector<float>(v->begin() + lo, v->begin() + hi);
    const GpuResult got = run_gpu(part, sub, 5, 9, {}, {}, Share{first, len});
    auto rows_of = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + lo, v.begin() + hi);
    };
    CHECK(got.h == rows_of(all.h));  // the same mask, so the same bits
    CHECK(got.y == rows_of(all.y));
    CHECK(got.dx == rows_of(all.dx));
    CHECK(got.ds == rows_of(all.ds));
    // Without the offset the share would draw the first sentences' mask instead.
    const GpuResult unshifted = run_gpu(part, sub, 5, 9);
    CHECK(unshifted.h != rows_of(all.h));
  }
}

VKF_TEST_CASE("layer_norm reference matches finite differences", "[shaders][layer_norm]") {
  const uint32_t rows = 3, d = 7, n = rows * d;
  auto x = ref::to_double(test::random_floats(n, 1, -2.0f, 2.0f));
  auto s = ref::to_double(test::random_floats(n, 2));
  auto gamma = ref::to_double(test::random_floats(d, 3, 0.5f, 1.5f));
  auto beta = ref::to_double(test::random_floats(d, 4));
  auto dy = ref::to_double(test::random_floats(n, 5));
  auto mask = ref::dropout_mask(n, 0.3f, 11, 2, 5);
  auto loss = [&](const std::vector<double>& x_, const std::vector<double>& s_,
                  const std::vector<double>& g_, const std::vector<double>& b_) {
    auto f = ref::layer_norm_forward(x_, s_, mask, g_, b_, rows, d, k_eps);
    double l = 0;
    for (uint32_t i = 0; i < n; ++i) l += f.y[i] * dy[i];
    return l;
  };
  auto g = ref::layer_norm_backward(dy, x, s, mask, gamma, rows, d, k_eps);
  const double h = 1e-6;
  auto fd = [&](std::vector<double>& v, size_t i, auto&& f) {
    double keep = v[i];
    v[i] = keep + h;
    double up = f();
    v[i] = keep - h;
    double down = f();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  auto l = [&] { return loss(x, s, gamma, beta); };
  for (uint32_t i = 0; i < n; ++i) {
    CHECK(std::fabs(fd(x, i, l) - g.dx[i]) < 1e-6);
    CHECK(std::fabs(fd(s, i, l) - g.ds[i]) < 1e-6);
  }
  for (uint32_t c = 0; c < d; ++c) {
    CHECK(std::fabs(fd(gamma, c, l) - g.dgamma[c]) < 1e-6);
    CHECK(std::fabs(fd(beta, c, l) - g.dbeta[c]) < 1e-6);
  }
}

VKF_TEST_CASE("layer_norm backward is deterministic run to run", "[shaders][layer_norm]") {
  Case c{300, 100, true, 0.1f, 0, ops::RowReduce::automatic};
  Inputs in(c.rows, c.d, 5);
  GpuResult a = run_gpu(c, in, 1, 1), b = run_gpu(c, in, 1, 1);
  CHECK(a.y == b.y);
  CHECK(a.dx == b.dx);
  CHECK(a.ds == b.ds);
  CHECK(a.dgamma == b.dgamma);
  CHECK(a.dbeta == b.dbeta);
  GpuResult other = run_gpu(c, in, 1, 2);  // another step: another mask
  CHECK(other.h != a.h);
}

VKF_TEST_CASE("layer_norm rejects bad shapes and buffers", "[shaders][layer_norm]") {
  Device& dev = test::device();
  Buffer b = dev.allocate(64 * 4, "b");
  Recorder rec(dev);
  ops::LayerNormForwardArgs f;
  f.x = f.gamma = f.beta = f.y = f.mean = f.rstd = b;
  f.rows = 8;
  f.d = 16;  // 128 floats do not fit in 64
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(dev, rec, f), Catch::Contains("needs 128 floats"));
  f.rows = 2;
  f.s = b;
  f.h = b;
  f.dropout = 0.1f;
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(dev, rec, f), Catch::Contains("step-scalar"));
  f.dropout = 0.0f;
  f.workgroup_size = 48;
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(dev, rec, f), Catch::Contains("power of two"));
  f.workgroup_size = 0;
  f.dtype = DType::i32;
  REQUIRE_THROWS_WITH(ops::layer_norm_forward(dev, rec, f), Catch::Contains("not supported"));
  if (dev.info().storage16) {  // f16 tensors are sized in halves: 2 x 64 fit in 64 floats
    f.dtype = DType::f16;
    f.d = 64;
    CHECK_NOTHROW(ops::layer_norm_forward(dev, rec, f));
    f.d = 65;
    REQUIRE_THROWS_WITH(ops::layer_norm_forward(dev, rec, f), Catch::Contains("needs 130 f16"));
  }
}

// Texel reads: forced where a view cannot start (an offset off the device's texel-buffer
// alignment), an error that says so; from the tuning, the _texel kernels, with the same bits as
// the storage buffers' (a texel fetch of R32F is exact).
VKF_TEST_CASE(
    "layer_norm texel reads: tuned ones give the storage reads' bits, a misfit forced is "
    "an error",
    "[shaders][layer_norm][tune]") {
  auto dev = test::new_device();
  const uint32_t rows = 3, d = 40, n = rows * d;
  Buffer x = upload(*dev, test::random_floats(n, 3), "x");
  Buffer gamma = upload(*dev, test::random_floats(d, 4), "gamma");
  Buffer beta = upload(*dev, test::random_floats(d, 5), "beta");
  Buffer y = dev->allocate(n * 4, "y"), mean = dev->allocate(rows * 4, "mean"),
         rstd = dev->allocate(rows * 4, "rstd");
  ops::LayerNormForwardArgs f;
  f.x = x, f.gamma = gamma, f.beta = beta, f.y = y, f.mean = mean, f.rstd = rstd;
  f.rows = rows, f.d = d;
  auto run = [&](const ops::LayerNormForwardArgs& a) {
    dev->upload(y, poisoned(n));
    Recorder rec(*dev);
    ops::layer_norm_forward(*dev, rec, a);
    Sequence seq = rec.finish();
    seq.run();
    return std::make_pair(seq.kernel_names(), dev->download<uint32_t>(y, n));
  };
  const auto storage = run(f);
  CHECK(storage.first.at(0).find("_texel") == std::string::npos);

  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  const ops::LayerNormConfig def = ops::layer_norm_default_config(dev->info(), d);
  tuning->layer_norm[ops::layer_norm_shape_class({DType::f32, false, rows, d})] = {
      def.workgroup_size, def.reduce, ops::RowKernelConfig::Reads::texel};
  dev->set_tuning(tuning);
  const auto texel = run(f);
  dev->set_tuning(nullptr);
  CHECK(texel.first.at(0).find("_texel") != std::string::npos);
  CHECK(texel.second == storage.second);

  if (const uint64_t align = dev->info().texel_buffer_alignment; align > 4) {
    Buffer big = dev->allocate(align + n * 4, "x at an offset");
    ops::LayerNormForwardArgs forced = f;
    forced.x = big.ref().slice(4, n * 4);
    forced.reads = ops::RowKernelConfig::Reads::texel;
    Recorder rec(*dev);
    REQUIRE_THROWS_WITH(ops::layer_norm_forward(*dev, rec, forced),
                        Catch::Contains("texel view") && Catch::Contains("no multiple of"));
  }
}

VKF_TEST_CASE("layer_norm refuses f16 on a device without 16-bit storage",
              "[shaders][layer_norm][f16]") {
  // An adopted device relies on no optional feature (Device::adopt), 16-bit storage included.
  test::BareDevice bare;
  {
    Device* dev = &bare.get();
    REQUIRE_FALSE(dev->info().storage16);
    Buffer b = dev->allocate(64 * 4, "b");
    Recorder rec(*dev);
    ops::LayerNormForwardArgs f;
    f.x = f.gamma = f.beta = f.y = f.mean = f.rstd = b;
    f.rows = 2;
    f.d = 16;
    f.dtype = DType::f16;
    REQUIRE_THROWS_WITH(ops::layer_norm_forward(*dev, rec, f), Catch::Contains("16-bit storage"));
    ops::LayerNormBackwardArgs g;
    g.dy = g.h = g.gamma = g.mean = g.rstd = g.dx = g.dgamma = g.dbeta = g.scratch = b;
    g.rows = 2;
    g.d = 16;
    g.dtype = DType::f16;
    REQUIRE_THROWS_WITH(ops::layer_norm_backward(*dev, rec, g), Catch::Contains("16-bit storage"));
  }
}

VKF_TEST_CASE("layer_norm over more than 65535 workgroups", "[shaders][layer_norm]") {
  // A workgroup per row: 70000 groups fold over the y dimension of the grid.
  check_case({70000, 16, true, 0.1f, 32, ops::RowReduce::shared}, 70000);
  if (test::device().info().storage16)
    check_case({70000, 16, true, 0.1f, 32, ops::RowReduce::shared, DType::f16}, 70001);
}
