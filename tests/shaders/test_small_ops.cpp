// scale, copy, casts, reductions and top-k against plain double/STL references (small enough to
// live here). Tolerances: scale and copy exact or 1 ulp; reductions rtol 1e-5 of the absolute sum;
// f32 -> f16 within half an f16 ulp (2^-11 relative, normal range); top-k exact (in f16 storage
// too: the reference sorts the f16-rounded values, which widen to fp32 exactly).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "engine/ops/elementwise.h"
#include "engine/ops/topk.h"
#include "engine/ops/topk_choice.h"
#include "engine/tuning.h"
#include "reference/loss.h"
#include "reference/stored.h"
#include "reference/topk_case.h"
#include "tests/support/bare_device.h"
#include "tests/support/f16_storage.h"
#include "tests/support/harness_self_test.h"
#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("scale with a constant, a per-step scalar and in place", "[shaders][small_ops]") {
  Device& dev = test::device();
  for (uint32_t n : {1u, 255u, 70001u}) {
    auto x = test::random_floats(n, n);
    Buffer bx = dev.allocate(n * 4, "x"), by = dev.allocate(n * 4, "y");
    Buffer scalars = dev.allocate(64, "scalars", MemoryKind::host);
    reinterpret_cast<float*>(scalars.mapped())[2] = -4.0f;
    dev.upload(bx, x);
    dev.upload(by, std::vector<float>(n, test::k_poison));
    Recorder rec(dev);
    ops::scale(dev, rec, {.x = bx, .y = by, .n = n, .alpha = 0.5f});
    rec.finish().run();
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = 0.5 * x[i];
    CHECK(test::tolerance_ratio(dev.download<float>(by, n), want, 0, 1e-7) <= 1.0);

    Recorder rec2(dev);
    ops::scale(dev, rec2,
               {.x = bx, .y = bx, .n = n, .alpha = 0.5f, .scalars = scalars, .scalar_index = 2});
    rec2.finish().run();
    for (uint32_t i = 0; i < n; ++i) want[i] = -2.0 * x[i];
    CHECK(test::tolerance_ratio(dev.download<float>(bx, n), want, 0, 1e-7) <= 1.0);
  }
}

VKF_TEST_CASE("copy: 1-D and strided 2-D blocks", "[shaders][small_ops]") {
  Device& dev = test::device();
  const uint32_t src_n = 5000, dst_n = 6000;
  auto src = test::random_floats(src_n, 1);
  Buffer bs = dev.allocate(src_n * 4, "src"), bd = dev.allocate(dst_n * 4, "dst");
  dev.upload(bs, src);
  struct Case {
    uint32_t rows, cols, so, ss, dof, ds;
  };
  for (Case c : {Case{1, 5000, 0, 0, 0, 0}, Case{1, 1, 4999, 0, 5999, 0}, Case{7, 33, 3, 50, 5, 41},
                 Case{70, 61, 1, 70, 13, 80}}) {
    INFO(c.rows << "x" << c.cols);
    dev.upload(bd, std::vector<float>(dst_n, test::k_poison));
    Recorder rec(dev);
    ops::copy(dev, rec,
              {.src = bs,
               .dst = bd,
               .rows = c.rows,
               .cols = c.cols,
               .src_offset = c.so,
               .src_stride = c.ss,
               .dst_offset = c.dof,
               .dst_stride = c.ds});
    rec.finish().run();
    auto got = dev.download<float>(bd, dst_n);
    std::vector<float> want(dst_n, test::k_poison);
    uint32_t ss = c.ss ? c.ss : c.cols, ds = c.ds ? c.ds : c.cols;
    for (uint32_t r = 0; r < c.rows; ++r)
      for (uint32_t j = 0; j < c.cols; ++j) want[c.dof + r * ds + j] = src[c.so + r * ss + j];
    CHECK(got == want);  // untouched elements stay poisoned
  }
  Recorder rec(dev);
  REQUIRE_THROWS_WITH(ops::copy(dev, rec, {.src = bs, .dst = bd, .rows = 2, .cols = 4000}),
                      Catch::Contains("copy source"));
}

VKF_TEST_CASE("fp32 <-> fp16 casts round trip", "[shaders][small_ops][cast]") {
  Device& dev = test::device();
  if (!dev.info().storage16) {
    WARN("no 16-bit storage on " << dev.label());
    return;
  }
  for (uint32_t n : {1u, 7u, 100001u}) {
    auto x = test::random_floats(n, n, -60000.0f, 60000.0f);
    for (uint32_t i = 0; i < n; i += 3) x[i] *= 1e-4f;  // small magnitudes too
    Buffer bx = dev.allocate(n * 4, "x"), bh = dev.allocate(n * 2 + 4, "h");
    Buffer by = dev.allocate(n * 4, "y"), bh2 = dev.allocate(n * 2 + 4, "h2");
    dev.upload(bx, x);
    dev.upload(by, std::vector<float>(n, test::k_poison));
    dev.upload(bh2, std::vector<uint16_t>(n + 2, 0xffff));
    Recorder rec(dev);
    ops::cast_f32_to_f16(dev, rec, {.x = bx, .y = bh, .n = n});
    ops::cast_f16_to_f32(dev, rec, {.x = bh, .y = by, .n = n});
    ops::cast_f32_to_f16(dev, rec, {.x = by, .y = bh2, .n = n});
    rec.finish().run();
    auto y = dev.download<float>(by, n);
    std::vector<double> want(x.begin(), x.end());
    // Normal range: half an ulp of f16 is 2^-11 relative; subnormals (< 6.1e-5) 2^-25 absolute.
    CHECK(test::tolerance_ratio(y, want, std::ldexp(1.0, -24), std::ldexp(1.0, -11)) <= 1.0);
    auto h = dev.download<uint16_t>(bh, n), h2 = dev.download<uint16_t>(bh2, n + 2);
    CHECK(std::equal(h.begin(), h.end(), h2.begin()));  // f16 -> f32 -> f16 is exact
    CHECK(h2[n] == 0xffff);                             // nothing written past n
  }
}

// Mixed-precision training moves fp16 weight gradients into fp32 accumulators this way.
VKF_TEST_CASE("fp16 values drained into fp32 accumulators", "[shaders][small_ops][cast]") {
  Device& dev = test::device();
  if (!dev.info().storage16) {
    WARN("no 16-bit storage on " << dev.label());
    return;
  }
  for (uint32_t n : {1u, 7u, 100001u}) {
    const auto x = ref::stored(test::random_floats(n, n, -300.0f, 300.0f), DType::f16);
    const auto y0 = test::random_floats(n, n + 1, -1.0f, 1.0f);
    Buffer bx = ref::upload_stored(dev, x, DType::f16, "x");
    Buffer by = dev.allocate(uint64_t{n} * 4 + 4, "y");
    dev.upload(by, y0);
    dev.upload(by.ref().slice(uint64_t{n} * 4, 4), std::vector<float>{test::k_poison});
    Recorder rec(dev);
    ops::drain_f16_into_f32(dev, rec, {.x = bx, .y = by, .n = n});
    rec.finish().run();
    const auto y = dev.download<float>(by, n + 1);
    std::vector<double> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = double(y0[i]) + double(x[i]);
    // One fp32 addition of two exact values: half an fp32 ulp.
    CHECK(test::tolerance_ratio(std::vector<float>(y.begin(), y.begin() + n), want, 1e-30,
                                std::ldexp(1.0, -24)) <= 1.0);
    CHECK(y[n] == test::k_poison);  // nothing written past n
    const auto drained = ref::download_stored(dev, bx, n, DType::f16);
    CHECK(std::all_of(drained.begin(), drained.end(), [](float v) { return v == 0.0f; }));
  }
}

VKF_TEST_CASE("sum and mean reductions are deterministic and match double",
              "[shaders][small_ops][reduce]") {
  Device& dev = test::device();
  for (uint32_t wg : {32u, 64u, 256u, 1024u}) {
    if (wg > dev.info().max_workgroup_invocations) continue;  // refused by name (a profile's)
    for (auto [rows, cols] :
         {std::pair{1u, 1u}, std::pair{5u, 37u}, std::pair{33u, 1000u}, std::pair{2u, 70001u}}) {
      INFO("wg " << wg << " [" << rows << ", " << cols << "]");
      auto x = test::random_floats(size_t{rows} * cols, rows * cols, -1.0f, 3.0f);
      Buffer bx = dev.allocate(x.size() * 4, "x"), by = dev.allocate(rows * 4, "y");
      dev.upload(bx, x);
      for (bool mean : {false, true}) {
        dev.upload(by, std::vector<float>(rows, test::k_poison));
        Recorder rec(dev);
        ops::reduce_rows(
            dev, rec,
            {.x = bx, .y = by, .rows = rows, .cols = cols, .mean = mean, .workgroup_size = wg});
        rec.finish().run();
        std::vector<double> want(rows);
        for (uint32_t r = 0; r < rows; ++r) {
          for (uint32_t c = 0; c < cols; ++c) want[r] += x[size_t{r} * cols + c];
          if (mean) want[r] /= cols;
        }
        CHECK(test::tolerance_ratio(dev.download<float>(by, rows), want, 1e-5 * (mean ? 1 : cols),
                                    1e-5) <= 1.0);
      }
    }
    for (uint32_t n : {1u, 8193u, 100003u}) {
      INFO("wg " << wg << " reduce_all of " << n);
      auto x = test::random_floats(n, n, -1.0f, 3.0f);
      Buffer bx = dev.allocate(n * 4, "x"), by = dev.allocate(4, "y");
      Buffer part = dev.allocate(ops::reduce_all_partials_bytes(n), "partials");
      dev.upload(bx, x);
      double sum = std::accumulate(x.begin(), x.end(), 0.0);
      std::vector<float> first;
      for (int rep = 0; rep < 2; ++rep) {
        for (bool mean : {false, true}) {
          dev.upload(by, std::vector<float>(1, test::k_poison));
          Recorder rec(dev);
          ops::reduce_all(
              dev, rec,
              {.x = bx, .y = by, .partials = part, .n = n, .mean = mean, .workgroup_size = wg});
          rec.finish().run();
          auto got = dev.download<float>(by, 1);
          CHECK(test::tolerance_ratio(got, {mean ? sum / n : sum}, 1e-5 * (mean ? 1 : n), 1e-5) <=
                1.0);
          if (rep == 0)
            first.push_back(got[0]);
          else
            CHECK(got[0] == first[mean ? 1 : 0]);  // bitwise the same on a rerun
        }
      }
    }
  }
}

namespace {

// Every shape of chunk, with and without the pruning pre-pass; a subgroup per row at a workgroup
// of one subgroup or less (lavapipe's is 8 lanes), and of several.
constexpr auto k_chunks = ops::TopKPath::chunks, k_rows = ops::TopKPath::subgroup_rows;
const ops::TopKConfig k_topk_configs[] = {{32, 4, true, k_chunks},  {32, 4, false, k_chunks},
                                          {64, 32, true, k_chunks}, {64, 32, false, k_chunks},
                                          {256, 8, true, k_chunks}, {1024, 3, true, k_chunks},
                                          {1, 1, false, k_rows},    {4, 1, false, k_rows},
                                          {64, 1, false, k_rows},   {256, 1, false, k_rows}};

// Whether `cfg` can run a problem on the test device, as the op judges it (the rows path: k <=
// 32 and subgroup arithmetic; a chunk: 2k entries, within the device's shared memory and
// workgroup size, which a profile may restrict: scripts/test-profiles).
bool topk_runs(const ops::TopKConfig& cfg, const ops::TopKProblem& p) {
  return ops::topk_config_misfit(test::device().info(), cfg, p).empty();
}

struct TopKShape {
  uint32_t rows, n, k;
  ref::TopKValues values = ref::TopKValues::ties;
};
constexpr auto k_masked = ref::TopKValues::masked, k_rounded = ref::TopKValues::rounded;

// The shape's values (the same for every configuration and storage type of a shape).
std::vector<float> topk_values(const TopKShape& s) {
  std::mt19937 rng(s.n + s.k);
  return ref::random_topk_values({.rows = s.rows, .n = s.n, .k = s.k}, s.values, rng);
}

// Through the top-k harness (reference/topk_case.h): every configuration that can run each
// shape, outputs poisoned, against the stable sort.
void check_topk(const std::vector<TopKShape>& shapes, DType t, bool log_softmax) {
  for (const TopKShape& s : shapes) {
    const std::vector<float> x = topk_values(s);
    for (const auto& cfg : k_topk_configs) {
      if (!topk_runs(cfg, {t, s.rows, s.n, s.k})) continue;
      const ref::TopKCase c{s.rows, s.n, s.k, t, cfg, log_softmax};
      INFO(c.describe());
      const ref::TopKRun run(test::device(), c, x);
      Recorder rec(test::device());
      run.record(rec);
      rec.finish().run();
      for (const ref::Comparison& cmp : run.compare()) {
        INFO(cmp.describe());
        CHECK(cmp.ok());
      }
    }
  }
}

// Odd row lengths, k at and between the rows path's list sizes (4, 8, 16, 32), more rows than
// a workgroup of subgroups covers.
const std::vector<TopKShape> k_topk_shapes = {{1, 1, 1},
                                              {3, 5, 5},
                                              {4, 37, 8},
                                              {2, 1000, 64},
                                              {2, 37003, 64},
                                              {5, 37003, 4},
                                              {3, 5000, 8, k_masked},
                                              {1, 3001, 10, k_rounded},
                                              {37, 999, 32},
                                              {70, 301, 17},
                                              {9, 33, 33}};

}  // namespace

VKF_TEST_CASE("topk matches partial_sort, ties to the lower index", "[shaders][small_ops][topk]") {
  check_topk(k_topk_shapes, DType::f32, false);
}

VKF_TEST_CASE("topk of f16 values matches partial_sort, ties to the lower index",
              "[shaders][small_ops][topk][f16]") {
  if (test::has_storage16()) check_topk(k_topk_shapes, DType::f16, false);
}

// Selection is exact, so "agrees" is equality: on the same f16-rounded values, the f16 and f32
// kernels pick the same entries in the same order.
VKF_TEST_CASE("topk of f16 values agrees with f32 on the same inputs",
              "[shaders][small_ops][topk][f16]") {
  if (!test::has_storage16()) return;
  const TopKShape s{3, 20000, 16, k_rounded};
  const std::vector<float> x = topk_values(s);
  for (const auto& cfg : k_topk_configs) {
    if (!topk_runs(cfg, {DType::f16, s.rows, s.n, s.k})) continue;
    ref::TopKOutputs got[2];
    for (int i = 0; i < 2; ++i) {
      const ref::TopKCase c{s.rows, s.n, s.k, i == 0 ? DType::f16 : DType::f32, cfg};
      INFO(c.describe());
      const ref::TopKRun run(test::device(), c, x);
      Recorder rec(test::device());
      run.record(rec);
      rec.finish().run();
      got[i] = run.outputs();
    }
    CHECK(got[0].values == got[1].values);
    CHECK(got[0].indices == got[1].indices);
  }
}

// Top-k of logits (beam search's step): the entries the logits order first, each with its
// log-softmax, x - log sum exp(row) against the double reference. Masked (-inf) entries stay -inf.
VKF_TEST_CASE("topk of logits returns the winners' log-softmax", "[shaders][small_ops][topk]") {
  const std::vector<TopKShape> shapes = {{1, 2, 1},
                                         {3, 5, 5},
                                         {2, 37003, 64},
                                         {5, 37003, 4},
                                         {3, 5000, 8, k_masked},
                                         {1, 3001, 10, k_rounded},
                                         {70, 301, 17}};
  check_topk(shapes, DType::f32, true);
  if (test::has_storage16()) check_topk(shapes, DType::f16, true);
}

VKF_TEST_CASE("the topk harness fails an unwritten or a corrupted output",
              "[shaders][small_ops][topk]") {
  Device& dev = test::device();
  const ref::TopKCase c{.rows = 3, .n = 301, .k = 7};
  const std::vector<float> x = topk_values({c.rows, c.n, c.k});
  const ref::TopKRun unwritten(dev, c, x);
  for (const ref::Comparison& cmp : unwritten.compare()) {
    INFO("unwritten: " << cmp.describe());
    CHECK(!cmp.ok());
  }
  test::check_corruption_caught(
      dev, [&] { return ref::TopKRun(dev, c, x); },
      [](const ref::TopKRun& run) { return run.compare(); }, "indices");
}

VKF_TEST_CASE("topk checks its arguments", "[shaders][small_ops][topk]") {
  Device& dev = test::device();
  Buffer b = dev.allocate(4096, "b");
  Recorder rec(dev);
  ops::TopKArgs a{.values = b, .out_values = b, .out_indices = b, .rows = 1, .n = 10, .k = 11};
  REQUIRE_THROWS_WITH(ops::topk(dev, rec, a), Catch::Contains("k must be"));
  // A forced configuration that cannot run k is refused, naming it.
  a.k = 9;
  a.config = {4, 2, false, ops::TopKPath::chunks};
  REQUIRE_THROWS_WITH(ops::topk(dev, rec, a),
                      Catch::Contains("chunks wg4x2") && Catch::Contains("half the chunk of 8"));
  if (dev.info().subgroup_arithmetic) {
    a.n = 100;
    a.k = 33;
    a.config = {64, 1, false, ops::TopKPath::subgroup_rows};
    REQUIRE_THROWS_WITH(ops::topk(dev, rec, a), Catch::Contains("above the subgroup-per-row"));
  }
  a.config = {};
  a.k = 3;
  a.n = 100000;
  REQUIRE_THROWS_WITH(ops::topk(dev, rec, a), Catch::Contains("values buffer"));
  a.n = 2048;  // one chunk: no scratch
  a.dtype = DType::i32;
  REQUIRE_THROWS_WITH(ops::topk(dev, rec, a), Catch::Contains("not supported"));
  if (dev.info().storage16) {  // f16 values are sized in halves: 2048 fit in 4096 bytes
    a.dtype = DType::f16;
    CHECK_NOTHROW(ops::topk(dev, rec, a));
    a.n = 2049;  // sizes are checked before the scratch
    REQUIRE_THROWS_WITH(ops::topk(dev, rec, a), Catch::Contains("values buffer"));
  }
}

// TopKConfig{} (automatic) runs the device's tuning for the shape class where it fits, and the
// scratch size the decoder asks for follows it.
VKF_TEST_CASE("topk runs the tuned configuration of its shape class",
              "[shaders][small_ops][topk]") {
  Device& dev = test::device();
  const TopKShape c{6, 3001, 8};
  const ops::TopKProblem p{DType::f32, c.rows, c.n, c.k};
  CHECK(ops::topk_shape_class(p) == "f32/r8/v4k/k8");
  CHECK(ops::choose_topk(dev.info(), nullptr, p).source == ops::ConfigSource::table);
  // The default's chunk (smaller where the device's shared memory is: a profile's 16 KiB).
  CHECK(ops::topk_scratch_bytes(dev, DType::f32, c.rows, c.n, c.k) ==
        ops::topk_scratch_bytes(c.rows, c.n, c.k, ops::choose_topk(dev.info(), nullptr, p).config));
  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  tuning->of<ops::TopKFamily>()[ops::topk_shape_class(p)] = {32, 4, false, k_chunks};
  dev.set_tuning(tuning);
  ops::TopKChoice choice = ops::choose_topk(dev.info(), dev.tuning(), p);
  CHECK(choice.source == ops::ConfigSource::tuned);
  CHECK(choice.why == "tuned for f32/r8/v4k/k8 (chunks wg32x4, test)");
  CHECK(ops::topk_scratch_bytes(dev, DType::f32, c.rows, c.n, c.k) ==
        ops::topk_scratch_bytes(c.rows, c.n, c.k, {32, 4, false, k_chunks}));
  {  // the engine's choice: the tuned entry, through the harness
    const ref::TopKCase automatic{.rows = c.rows, .n = c.n, .k = c.k};
    std::mt19937 rng(1);
    const ref::TopKRun run(dev, automatic, ref::TopKValues::ties, rng);
    Recorder rec(dev);
    run.record(rec);
    rec.finish().run();
    for (const ref::Comparison& cmp : run.compare()) {
      INFO(cmp.describe());
      CHECK(cmp.ok());
    }
  }
  // An entry the device cannot run is passed over, with the reason.
  tuning->of<ops::TopKFamily>()[ops::topk_shape_class(p)] = {2048, 1, false, k_chunks};
  choice = ops::choose_topk(dev.info(), dev.tuning(), p);
  CHECK(choice.source == ops::ConfigSource::table);
  CHECK_THAT(choice.why, Catch::Contains("passed over: workgroup size 2048"));
  dev.set_tuning(nullptr);
}

VKF_TEST_CASE("topk refuses f16 on a device without 16-bit storage",
              "[shaders][small_ops][topk][f16]") {
  test::BareDevice bare;
  Device& dev = bare.get();
  REQUIRE_FALSE(dev.info().storage16);
  Buffer b = dev.allocate(4096, "b");
  Recorder rec(dev);
  ops::TopKArgs a{.dtype = DType::f16,
                  .values = b,
                  .out_values = b,
                  .out_indices = b,
                  .rows = 1,
                  .n = 10,
                  .k = 3};
  REQUIRE_THROWS_WITH(ops::topk(dev, rec, a), Catch::Contains("16-bit storage"));
}
