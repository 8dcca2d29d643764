// LayerNorm forward/backward (plain and post-LN residual + dropout) against the double reference,
// every workgroup size and reduction path forced, plus finite differences of the reference.
#include <cmath>
#include <cstring>
#include <tuple>

#include "engine/ops/layer_norm.h"
#include "engine/step_scalars.h"
#include "tests/reference/layer_norm.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

constexpr double k_eps = 1e-6;

std::vector<float> poisoned(size_t n) {
  return std::vector<float>(n, test::k_poison);
}

Buffer step_buffer(Device& dev, uint32_t seed, uint32_t step) {
  Buffer b = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.seed = seed;
  st.step = step;
  std::memcpy(b.mapped(), &st, sizeof st);
  return b;
}

Buffer upload(Device& dev, const std::vector<float>& v, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(v.size(), 1) * 4, what);
  dev.upload(b, v);
  return b;
}

struct Case {
  uint32_t rows, d;
  bool residual;
  float p;
  uint32_t wg;
  ops::RowReduce reduce;
};

// Inputs for one case: x has an offset so that the variance pass must not cancel.
struct Inputs {
  std::vector<float> x, s, gamma, beta, dy;
  Inputs(uint32_t rows, uint32_t d, uint32_t seed) {
    const size_t n = size_t{rows} * d;
    x = test::random_floats(n, seed, 2.0f, 4.0f);
    s = test::random_floats(n, seed + 1);
    gamma = test::random_floats(d, seed + 2, 0.5f, 1.5f);
    beta = test::random_floats(d, seed + 3);
    dy = test::random_floats(n, seed + 4);
  }
};

struct GpuResult {
  std::vector<float> y, h, mean, rstd, dx, ds, dgamma, dbeta;
};

GpuResult run_gpu(const Case& c, const Inputs& in, uint32_t seed, uint32_t step,
                  const std::vector<float>& dx0 = {}, const std::vector<float>& dparam0 = {}) {
  Device& dev = test::device();
  const size_t n = size_t{c.rows} * c.d;
  Buffer x = upload(dev, in.x, "x"), s = upload(dev, in.s, "s");
  Buffer gamma = upload(dev, in.gamma, "gamma"), beta = upload(dev, in.beta, "beta");
  Buffer dy = upload(dev, in.dy, "dy");
  Buffer y = upload(dev, poisoned(n), "y"), h = upload(dev, poisoned(n), "h");
  Buffer mean = upload(dev, poisoned(c.rows), "mean"), rstd = upload(dev, poisoned(c.rows), "rstd");
  Buffer dx = upload(dev, dx0.empty() ? poisoned(n) : dx0, "dx");
  Buffer ds = upload(dev, poisoned(n), "ds");
  Buffer dgamma = upload(dev, dparam0.empty() ? poisoned(c.d) : dparam0, "dgamma");
  Buffer dbeta = upload(dev, dparam0.empty() ? poisoned(c.d) : dparam0, "dbeta");
  Buffer scratch = dev.allocate(ops::layer_norm_backward_scratch_bytes(c.rows, c.d), "scratch");
  dev.upload(scratch, poisoned(scratch.size() / 4));
  Buffer st = step_buffer(dev, seed, step);

  Recorder rec(dev);
  ops::LayerNormForwardArgs f;
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
  f.workgroup_size = c.wg;
  f.reduce = c.reduce;
  ops::layer_norm_forward(dev, rec, f);

  ops::LayerNormBackwardArgs b;
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
  b.accumulate_dx = !dx0.empty();
  b.accumulate_params = !dparam0.empty();
  b.workgroup_size = c.wg;
  b.reduce = c.reduce;
  ops::layer_norm_backward(dev, rec, b);
  rec.finish().run();

  GpuResult r;
  r.y = dev.download<float>(y, n);
  if (c.residual) r.h = dev.download<float>(h, n);
  r.mean = dev.download<float>(mean, c.rows);
  r.rstd = dev.download<float>(rstd, c.rows);
  r.dx = dev.download<float>(dx, n);
  if (c.residual) r.ds = dev.download<float>(ds, n);
  r.dgamma = dev.download<float>(dgamma, c.d);
  r.dbeta = dev.download<float>(dbeta, c.d);
  return r;
}

std::vector<double> plus(std::vector<double> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

void check_case(const Case& c, uint32_t seed) {
  INFO("rows " << c.rows << " d " << c.d << " residual " << c.residual << " p " << c.p << " wg "
               << c.wg << " reduce " << int(c.reduce));
  Inputs in(c.rows, c.d, seed);
  const uint32_t n = c.rows * c.d;
  auto mask = c.residual ? ref::dropout_mask(n, c.p, 99, 3, 7) : std::vector<double>{};
  auto s = c.residual ? ref::to_double(in.s) : std::vector<double>{};
  auto x = ref::to_double(in.x), gamma = ref::to_double(in.gamma);
  // Accumulating into non-zero gradients checks the += paths at the same time.
  const bool acc = seed % 2 == 1;
  auto dx0 = acc ? test::random_floats(n, seed + 10) : std::vector<float>{};
  auto dp0 = acc ? test::random_floats(c.d, seed + 11) : std::vector<float>{};
  GpuResult got = run_gpu(c, in, 99, 3, dx0, dp0);

  // h = x + mask * s is one fp32 rounding away from the exact sum, and a row whose values
  // nearly agree magnifies that by rstd. So h is checked against the exact sum, and the
  // normalisation and its gradients against the reference evaluated at the kernel's h.
  auto beta = ref::to_double(in.beta), dy = ref::to_double(in.dy);
  if (c.residual) {
    auto exact = ref::layer_norm_forward(x, s, mask, gamma, beta, c.rows, c.d, k_eps);
    CHECK(test::tolerance_ratio(got.h, exact.h, 1e-6, 1e-6) <= 1.0);
  }
  auto h = c.residual ? ref::to_double(got.h) : x;
  auto want = ref::layer_norm_forward(h, {}, {}, gamma, beta, c.rows, c.d, k_eps);
  auto grads = ref::layer_norm_backward(dy, h, {}, {}, gamma, c.rows, c.d, k_eps);
  if (c.residual) {  // ds = dh * mask, the chain rule through h = x + mask * s
    grads.ds = grads.dx;
    for (uint32_t i = 0; i < n; ++i) grads.ds[i] *= mask[i];
  }

  // fp32 tolerances: y is O(1); gradients sum over d (dx) or rows (dgamma, dbeta).
  CHECK(test::tolerance_ratio(got.y, want.y, 2e-5, 1e-4) <= 1.0);
  CHECK(test::tolerance_ratio(got.mean, want.mean, 1e-5, 1e-5) <= 1.0);
  CHECK(test::tolerance_ratio(got.rstd, want.rstd, 1e-5, 1e-4) <= 1.0);
  auto want_dx = acc ? plus(grads.dx, dx0) : grads.dx;
  auto want_dg = acc ? plus(grads.dgamma, dp0) : grads.dgamma;
  auto want_db = acc ? plus(grads.dbeta, dp0) : grads.dbeta;
  CHECK(test::tolerance_ratio(got.dx, want_dx, 5e-5, 1e-4) <= 1.0);
  if (c.residual) {
    CHECK(test::tolerance_ratio(got.ds, grads.ds, 5e-5, 1e-4) <= 1.0);
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
    check_case({rows, d, residual, residual ? 0.25f : 0.0f, 0, ops::RowReduce::automatic},
               seed + residual);
}

VKF_TEST_CASE("layer_norm: every workgroup size and reduction path", "[shaders][layer_norm]") {
  auto reduce =
      GENERATE(ops::RowReduce::shared, ops::RowReduce::subgroup, ops::RowReduce::subgroup_rows);
  if (reduce != ops::RowReduce::shared && !test::device().info().subgroup_arithmetic) return;
  for (uint32_t wg : {4u, 32u, 64u, 128u, 256u})  // 4: a partial subgroup
    for (auto [rows, d] : {std::pair{3u, 7u}, {2u, 513u}, {4u, 100u}})
      check_case({rows, d, true, 0.1f, wg, reduce}, wg + d + rows);
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
}

VKF_TEST_CASE("layer_norm over more than 65535 workgroups", "[shaders][layer_norm]") {
  // A workgroup per row: 70000 groups fold over the y dimension of the grid.
  check_case({70000, 16, true, 0.1f, 32, ops::RowReduce::shared}, 70000);
}
