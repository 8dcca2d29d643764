// LayerNorm forward/backward (plain and post-LN residual + dropout) against the double reference,
// every workgroup size and reduction path forced, in f32 and f16 storage, plus finite
// differences of the reference. The set-up, run and comparison are the LayerNorm harness's
// (reference/layer_norm_case.h), shared with the tuner's correctness guard.
#include <cmath>
#include <random>
#include <tuple>

#include "engine/ops/layer_norm.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/philox.h"
#include "engine/tuning.h"
#include "reference/layer_norm.h"
#include "reference/layer_norm_case.h"
#include "reference/stored.h"
#include "tests/support/bare_device.h"
#include "tests/support/f16_storage.h"
#include "tests/support/harness_self_test.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

using test::has_storage16;

constexpr double k_eps = 1e-6;  // the finite-difference check's; the harness runs with the same

// The knobs the tests below vary; the harness's LayerNormCase has these and the dropout stream.
struct Case {
  uint32_t rows, d;
  bool residual;
  float p;
  uint32_t wg;
  ops::RowReduce reduce;
  DType dtype = DType::f32;  // storage of x, s, y, h, dy, dx, ds
  ops::RowKernelConfig::Reads reads = ops::RowKernelConfig::Reads::automatic;
};

// share: the rows are sentences of share.len tokens that start at sentence share.first of a
// larger batch (StepScalars::dropout_row).
struct Share {
  uint32_t first = 0, len = 0;
};

// The harness's case for c with the dropout stream (seed, step).
ref::LayerNormCase harness_case(const Case& c, uint32_t seed = 99, uint32_t step = 3,
                                Share share = {}) {
  ref::LayerNormCase h;
  h.rows = c.rows, h.d = c.d, h.residual = c.residual, h.dropout = c.p, h.dtype = c.dtype;
  h.config = {c.wg, c.reduce, c.reads};
  h.seed = seed, h.step = step, h.dropout_row = share.first, h.sentence_len = share.len;
  return h;
}

// Inputs for c drawn from `seed`: x has an offset so that the variance pass must not cancel. The
// [rows, d] tensors hold values of the storage type (rounded to f16 for f16), so that the
// reference sees exactly what the kernels read.
ref::LayerNormInputs inputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  return ref::random_layer_norm_inputs(harness_case(c), rng);
}

// Runs c's forward and backward on `in` through the harness (outputs poisoned first) and returns
// what they wrote.
ref::LayerNormOutputs run_gpu(const Case& c, const ref::LayerNormInputs& in, uint32_t seed,
                              uint32_t step, Share share = {}) {
  Device& dev = test::device();
  const ref::LayerNormRun run(dev, harness_case(c, seed, step, share), in);
  Recorder rec(dev);
  run.record(rec);
  rec.finish().run();
  return run.outputs();
}

// c through the harness, every output within the tolerances of its storage type; odd seeds
// accumulate into non-zero gradients, which checks the += paths at the same time.
void check_case(const Case& c, uint32_t seed) {
  ref::LayerNormCase hc = harness_case(c);
  hc.accumulate = seed % 2 == 1;
  INFO(hc.describe() << ", seed " << seed);
  Device& dev = test::device();
  std::mt19937 rng(seed);
  const ref::LayerNormRun run(dev, hc, rng);
  Recorder rec(dev);
  run.record(rec);
  rec.finish().run();
  for (const ref::Comparison& cmp : run.compare(ref::layer_norm_tolerance(c.dtype))) {
    INFO(cmp.describe());
    CHECK(cmp.ok());
  }
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
  ref::LayerNormInputs in =
      inputs({rows, 1, true, 0.0f, 0, ops::RowReduce::automatic, DType::f16}, 5);
  for (uint32_t r = 0; r < rows; ++r) {
    in.x[r] = pairs[r].first;
    in.s[r] = pairs[r].second;
  }
  in.x = ref::stored(in.x, DType::f16);
  in.s = ref::stored(in.s, DType::f16);
  std::vector<float> sums(rows);
  for (uint32_t r = 0; r < rows; ++r) sums[r] = in.x[r] + in.s[r];
  const std::vector<float> want_h = ref::stored(sums, DType::f16);
  const std::vector<float> want_y = ref::stored(in.beta, DType::f16);
  for (auto reduce :
       {ops::RowReduce::shared, ops::RowReduce::subgroup, ops::RowReduce::subgroup_rows})
    for (float p : {0.0f, 0.25f}) {
      if (reduce != ops::RowReduce::shared && !test::device().info().subgroup_arithmetic) continue;
      INFO("reduce " << int(reduce) << " p " << p);
      const ref::LayerNormOutputs got =
          run_gpu({rows, 1, true, p, 0, reduce, DType::f16}, in, 99, 3);
      const auto mask = ref::dropout_mask(rows, p, 99, 3, ref::k_layer_norm_tensor_id);
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
      const Case c{rows, d, residual, p, 0, reduce, DType::f16};
      ref::LayerNormInputs in = inputs(c, rows + d);
      const ref::LayerNormOutputs half = run_gpu(c, in, 99, 3);
      if (residual) in.x = half.h;
      const ref::LayerNormOutputs full =
          run_gpu({rows, d, false, 0.0f, 0, reduce, DType::f32}, in, 99, 3);

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
        for (uint32_t i = 0; i < n; ++i)
          want[i] = full.dx[i] * dropout_scale(p, 99, 3, ref::k_layer_norm_tensor_id, i);
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
    const ref::LayerNormInputs in = inputs(whole, 11);
    const ref::LayerNormOutputs all = run_gpu(whole, in, 5, 9);
    Case part = whole;
    part.rows = count * len;
    ref::LayerNormInputs sub = in;
    const size_t lo = size_t{first} * len * d, hi = lo + size_t{part.rows} * d;
    for (auto* v : {&sub.x, &sub.s, &sub.dy})
      *v = std::vector<float>(v->begin() + lo, v->begin() + hi);
    const ref::LayerNormOutputs got = run_gpu(part, sub, 5, 9, Share{first, len});
    auto rows_of = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + lo, v.begin() + hi);
    };
    CHECK(got.h == rows_of(all.h));  // the same mask, so the same bits
    CHECK(got.y == rows_of(all.y));
    CHECK(got.dx == rows_of(all.dx));
    CHECK(got.ds == rows_of(all.ds));
    // Without the offset the share would draw the first sentences' mask instead.
    const ref::LayerNormOutputs unshifted = run_gpu(part, sub, 5, 9);
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
  const ref::LayerNormInputs in = inputs(c, 5);
  const ref::LayerNormOutputs a = run_gpu(c, in, 1, 1), b = run_gpu(c, in, 1, 1);
  CHECK(a.y == b.y);
  CHECK(a.dx == b.dx);
  CHECK(a.ds == b.ds);
  CHECK(a.dgamma == b.dgamma);
  CHECK(a.dbeta == b.dbeta);
  const ref::LayerNormOutputs other = run_gpu(c, in, 1, 2);  // another step: another mask
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
  Buffer x = ref::upload_stored(*dev, test::random_floats(n, 3), DType::f32, "x");
  Buffer gamma = ref::upload_stored(*dev, test::random_floats(d, 4), DType::f32, "gamma");
  Buffer beta = ref::upload_stored(*dev, test::random_floats(d, 5), DType::f32, "beta");
  Buffer y = dev->allocate(n * 4, "y"), mean = dev->allocate(rows * 4, "mean"),
         rstd = dev->allocate(rows * 4, "rstd");
  ops::LayerNormForwardArgs f;
  f.x = x, f.gamma = gamma, f.beta = beta, f.y = y, f.mean = mean, f.rstd = rstd;
  f.rows = rows, f.d = d;
  auto run = [&](const ops::LayerNormForwardArgs& a) {
    ref::poison(*dev, y, n, DType::f32);
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
  tuning->of<ops::LayerNormFamily>()[ops::layer_norm_shape_class({DType::f32, false, rows, d})] = {
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

// The harness itself (reference/layer_norm_case.h), so that no case above passes vacuously: an
// output the kernels did not write (still poison) fails, and so does y overwritten after them
// (the tuner's sabotage), while everything else still passes.
VKF_TEST_CASE("the layer_norm harness fails an unwritten or a corrupted output",
              "[shaders][layer_norm]") {
  Device& dev = test::device();
  for (bool residual : {false, true}) {
    const ref::LayerNormCase c =
        harness_case({5, 37, residual, residual ? 0.25f : 0.0f, 0, ops::RowReduce::automatic});
    INFO(c.describe());
    const ref::LayerNormTolerance tol = ref::layer_norm_tolerance(c.dtype);
    std::mt19937 rng(3);
    const ref::LayerNormRun unwritten(dev, c, rng);
    for (const ref::Comparison& cmp : unwritten.compare(tol)) {
      INFO("unwritten: " << cmp.describe());
      CHECK(!cmp.ok());
    }
    test::check_corruption_caught(
        dev, [&] { return ref::LayerNormRun(dev, c, rng); },
        [&](const ref::LayerNormRun& run) { return run.compare(tol); }, "y");
  }
}
