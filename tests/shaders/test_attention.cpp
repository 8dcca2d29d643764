// Fused attention (engine/ops/attention.h) against the double reference
// (reference/attention.h): forward and backward on random shapes (cross attention, lengths
// that are no tile multiple, per-batch padding, causal, dropout), both kernel paths (tiled and
// rows, ops::AttentionPath) with every tile / rows-per-lane configuration, strided layouts, f16
// storage, fully masked rows, and finite-difference gradient checks.
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "engine/ops/attention.h"
#include "engine/ops/basic.h"
#include "engine/step_scalars.h"
#include "reference/attention.h"
#include "reference/attention_case.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

using Path = ops::AttentionPath;

const char* path_name(Path p) {
  return p == Path::tiled ? "tiled" : p == Path::rows ? "rows" : "automatic";
}

// The paths every test runs; the rows path needs a subgroup of 4..32 lanes, a multiple of 4.
bool has_rows_path(const DeviceInfo& info) {
  return info.subgroup_size >= 4 && info.subgroup_size <= 32 && info.subgroup_size % 4 == 0;
}

// The paths the sweeps below run: the tiled path everywhere, the rows path where the engine runs
// it, on CPU devices. On a GPU the engine never picks the rows path, and NVIDIA's compiler (H100,
// driver 580.159.04) takes 6-40 s to build each of its pipelines at d 16, longer at d 64-128
// (they unroll over the subgroup's 32 lanes; VKF_LOG_PIPELINES=1 showed it): the sweeps ran for
// many minutes there, which read as a hang. "attention's rows path matches the reference on
// every device that has one" runs a small case on GPUs too.
std::vector<Path> paths() {
  const DeviceInfo& info = test::device().info();
  if (!has_rows_path(info)) {
    WARN("no rows path on " << info.name << " (subgroup of " << info.subgroup_size << ")");
    return {Path::tiled};
  }
  if (!info.is_cpu()) {
    WARN("the rows path is swept on CPU devices only; " << info.name << " runs one case of it");
    return {Path::tiled};
  }
  return {Path::tiled, Path::rows};
}

ops::AttentionTiles on_path(Path p) {
  ops::AttentionTiles t;
  t.path = p;
  return t;
}

struct Case {
  ref::AttentionShape s;
  const char* what;
};

// Shapes the tests sweep: batch > 1, heads 1..8, len_q != len_k, lengths 1, 7, 33, 70, padding
// varying per batch (1 and 0 included), causal and dropout on and off, d 16..128 and odd dims.
std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&](int b, int h, int lq, int lk, int dk, int dv, bool causal, float p,
                 std::vector<int> key_len, std::vector<int> q_len, const char* what) {
    ref::AttentionShape s;
    s.batch = b, s.heads = h, s.len_q = lq, s.len_k = lk, s.d_k = dk, s.d_v = dv;
    s.causal = causal, s.dropout_p = p, s.key_len = key_len, s.q_len = q_len;
    s.seed = 1234, s.step = 7, s.tensor_id = 42;
    c.push_back({s, what});
  };
  add(2, 3, 7, 33, 16, 16, false, 0.0f, {33, 5}, {}, "cross 7x33 d16 padded");
  add(3, 2, 33, 70, 32, 32, false, 0.2f, {70, 1, 40}, {33, 20, 1}, "cross 33x70 d32 dropout");
  add(2, 4, 70, 70, 64, 64, true, 0.0f, {70, 45}, {}, "self 70 d64 causal padded");
  add(2, 1, 1, 1, 128, 128, false, 0.0f, {}, {}, "one token d128");
  add(2, 8, 33, 33, 128, 128, true, 0.1f, {33, 17}, {33, 17}, "self 33 d128 causal dropout");
  add(1, 2, 70, 7, 40, 24, false, 0.0f, {}, {}, "cross 70x7 d_k 40 d_v 24");
  add(2, 2, 64, 64, 64, 64, true, 0.1f, {64, 64}, {}, "self 64 d64 causal dropout");
  add(2, 2, 7, 9, 16, 16, true, 0.2f, {0, 9}, {7, 0}, "fully masked batches");
  // Head dims that are no multiple of 4 (the rows path's scalar reads), len_k odd (its dropout
  // runs start anywhere in a Philox block).
  add(2, 2, 9, 13, 18, 5, true, 0.15f, {13, 6}, {9, 4}, "cross 9x13 d_k 18 d_v 5 dropout");
  return c;
}

size_t count_q(const ref::AttentionShape& s) {
  return size_t(s.batch) * s.heads * s.len_q * s.d_k;
}
size_t count_k(const ref::AttentionShape& s) {
  return size_t(s.batch) * s.heads * s.len_k * s.d_k;
}
size_t count_v(const ref::AttentionShape& s) {
  return size_t(s.batch) * s.heads * s.len_k * s.d_v;
}
size_t count_o(const ref::AttentionShape& s) {
  return size_t(s.batch) * s.heads * s.len_q * s.d_v;
}

std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

// Runs forward then backward with `tiles` through the attention harness
// (reference/attention_case.h: every output poisoned first) and checks every output (O, LSE, dQ,
// dK, dV) against the reference at attention_tolerance(dtype).
void check_case(const Case& c, const ops::AttentionTiles& tiles, DType dtype) {
  Device& dev = test::device();
  INFO(c.what << " " << path_name(tiles.path) << " tiles wg " << tiles.workgroup << " "
              << tiles.block_q << "x" << tiles.block_k << " rows " << tiles.rows << " unroll "
              << uint32_t(tiles.unroll) << " " << dtype_name(dtype));
  std::mt19937 rng(uint32_t(c.s.len_q * 131 + c.s.len_k));
  const ref::AttentionRun run(dev, {c.s, dtype}, rng);
  const ops::AttentionBackwardArgs g = run.backward_args(tiles);
  Recorder rec(dev);
  run.poison(rec);
  ops::attention_forward(dev, rec, g.fwd);
  ops::attention_backward(dev, rec, g);
  rec.finish().run();
  const ref::AttentionTolerance tol = ref::attention_tolerance(dtype);
  for (const std::vector<ref::Comparison>& checked :
       {run.compare_forward(tol), run.compare_backward(tol)})
    for (const ref::Comparison& cmp : checked) {
      INFO(cmp.describe());
      CHECK(cmp.ok());
    }
}

// One run of forward and backward on `tiles`: O, dQ, dK, dV as the device wrote them.
std::array<std::vector<float>, 4> run_outputs(const ref::AttentionRun& run,
                                              const ops::AttentionTiles& tiles) {
  Device& dev = test::device();
  const ops::AttentionBackwardArgs g = run.backward_args(tiles);
  Recorder rec(dev);
  run.poison(rec);
  ops::attention_forward(dev, rec, g.fwd);
  ops::attention_backward(dev, rec, g);
  rec.finish().run();
  return {run.o(), run.d_q(), run.d_k(), run.d_v()};
}

// The tiled path's forced configurations besides the default: the shapes other devices take,
// including a workgroup smaller than a tile's rows. Each compiles in about a second on llvmpipe,
// so every case runs on each.
std::vector<ops::AttentionTiles> tiled_variants() {
  std::vector<ops::AttentionTiles> t;
  for (ops::AttentionTiles x : std::vector<ops::AttentionTiles>{{64, 16, 16},
                                                                {32, 8, 32},
                                                                {8, 16, 16},
                                                                {128, 32, 32},
                                                                {256, 32, 32},
                                                                {64, 32, 16},
                                                                {32, 8, 8}}) {
    x.path = Path::tiled;
    t.push_back(x);
  }
  return t;
}

// The rows path's forced configurations besides the default: 1, 3 (no multiple of 4: dK/dV's
// dropout runs start anywhere in a Philox block) and 8 rows per lane, and the backward's rolled
// and unrolled query loops, whichever the subgroup size picks.
std::vector<ops::AttentionTiles> rows_variants() {
  std::vector<ops::AttentionTiles> t;
  for (uint32_t rows : {1u, 3u, 8u}) {
    ops::AttentionTiles x = on_path(Path::rows);
    x.rows = rows;
    t.push_back(x);
  }
  for (auto unroll : {ops::AttentionTiles::Unroll::rolled, ops::AttentionTiles::Unroll::unrolled})
    for (uint32_t rows : {0u, 3u}) {
      ops::AttentionTiles x = on_path(Path::rows);
      x.rows = rows;
      x.unroll = unroll;
      t.push_back(x);
    }
  return t;
}

uint32_t max_dim(const Case& c) {
  return uint32_t(std::max(c.s.d_k, c.s.d_v));
}

bool fits(Device& dev, const ops::AttentionTiles& t, const ref::AttentionShape& s) {
  if (t.path == Path::rows) return t.rows * std::max(s.d_k, s.d_v) <= 512;
  if (t.workgroup == 0) return true;
  for (auto k : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                 ops::AttentionKernel::backward_q})
    if (ops::attention_shared_bytes(k, t, s.d_k, s.d_v) > dev.info().shared_memory_bytes)
      return false;
  return true;
}

}  // namespace

// Every rows-path kernel is specialized for its head dims, rows per lane and masks, and llvmpipe
// takes 10-50 s to compile one of d 64 or 128 (a few seconds for d <= 40). So every case runs on
// each path's default tiles, the configuration the engine picks; the tiled variants, cheap to
// compile, run on every case too; the rows variants run on the cases of small head dims, which
// take the same code through the same loops (fewer iterations of the d loops). The default
// tiles' cases are split at d 64 so that the two halves can run side by side: on Mesa 25's
// lavapipe the rows kernels of one d 128 case take over 260 s to compile (scripts/test-mesa25
// runs the first half there).
VKF_TEST_CASE(
    "attention forward and backward match the reference on each path's default tiles, d to 64",
    "[shaders][attention]") {
  for (const Case& c : cases())
    if (max_dim(c) <= 64)
      for (Path path : paths()) check_case(c, on_path(path), DType::f32);
}

VKF_TEST_CASE(
    "attention forward and backward match the reference on each path's default tiles, d 128",
    "[shaders][attention]") {
  for (const Case& c : cases())
    if (max_dim(c) > 64)
      for (Path path : paths()) check_case(c, on_path(path), DType::f32);
}

VKF_TEST_CASE("attention forward and backward match the reference, every tiled-path tile config",
              "[shaders][attention]") {
  Device& dev = test::device();
  for (const Case& c : cases())
    for (const auto& t : tiled_variants())
      if (fits(dev, t, c.s)) check_case(c, t, DType::f32);
}

VKF_TEST_CASE("attention forward and backward match the reference, every rows-path variant",
              "[shaders][attention]") {
  Device& dev = test::device();
  if (paths().size() < 2) return;  // paths() said why
  for (const Case& c : cases())
    for (const auto& t : rows_variants()) {
      // 8 rows a lane: the d <= 18 cases (odd dims, padding, fully masked rows, dropout).
      const uint32_t max_d = t.rows == 8 ? 18 : 40;
      if (max_dim(c) <= max_d && fits(dev, t, c.s)) check_case(c, t, DType::f32);
    }
}

// The rows path on any device that can run it, GPUs included (the sweeps above run it on CPU
// devices only): two small cases, padding and fully masked rows with causal dropout, on the
// default rows per lane and both backward query loops.
VKF_TEST_CASE("attention's rows path matches the reference on every device that has one",
              "[shaders][attention]") {
  const DeviceInfo& info = test::device().info();
  if (!has_rows_path(info)) {
    WARN("no rows path on " << info.name << " (subgroup of " << info.subgroup_size << ")");
    return;
  }
  const std::vector<Case> all = cases();
  for (const Case& c : {all[0], all[7]}) {
    REQUIRE(max_dim(c) == 16);  // the small ones: cases() keeps them at these places
    for (auto unroll :
         {ops::AttentionTiles::Unroll::rolled, ops::AttentionTiles::Unroll::unrolled}) {
      ops::AttentionTiles t = on_path(Path::rows);
      t.unroll = unroll;
      check_case(c, t, DType::f32);
    }
  }
}

// f16 storage changes the loads and stores only: the cases of d <= 64 (the base and big models'
// head dim; the f32 tests take d 128 through the same loops) on each path's default tiles, and
// the small-dim cases on the tiled path's 64 threads on 16x16 tiles and the rows path's 3 rows
// with the unrolled backward (the default takes the rolled one).
VKF_TEST_CASE("attention with f16 storage matches the reference", "[shaders][attention][f16]") {
  Device& dev = test::device();
  if (!dev.info().storage16) {
    WARN("no 16-bit storage on " << dev.info().name);
    return;
  }
  for (const Case& c : cases())
    for (Path path : paths())
      for (uint32_t variant : {0, 1}) {
        if (max_dim(c) > (variant == 0 ? 64u : 40u)) continue;
        ops::AttentionTiles t = on_path(path);
        if (variant == 1 && path == Path::tiled) t.workgroup = 64, t.block_q = 16, t.block_k = 16;
        if (variant == 1 && path == Path::rows) t.rows = 3;
        if (path == Path::rows)
          t.unroll = variant == 0 ? ops::AttentionTiles::Unroll::rolled
                                  : ops::AttentionTiles::Unroll::unrolled;
        if (fits(dev, t, c.s)) check_case(c, t, DType::f16);
      }
}

namespace {

// Self-attention fed straight from a fused QKV projection [batch, len, 3, heads, d], output
// [batch, len, heads, d]; the gradients land in the same fused layout.
void check_strided(Path path) {
  INFO(path_name(path));
  Device& dev = test::device();
  const int batch = 2, heads = 2, len = 33, d = 32, hd = heads * d;
  ref::AttentionShape s;
  s.batch = batch, s.heads = heads, s.len_q = len, s.len_k = len, s.d_k = d, s.d_v = d;
  s.causal = true, s.key_len = {33, 20}, s.dropout_p = 0.1f, s.seed = 5, s.step = 3;
  auto qkv = test::random_floats(size_t(batch) * len * 3 * hd, 17, -2.0f, 2.0f);
  auto d_o = test::random_floats(size_t(batch) * len * hd, 18);
  // Gathers part `part` (0 q, 1 k, 2 v) of the fused tensor as contiguous [b, h, len, d].
  auto gather = [&](const std::vector<float>& x, int part, int parts) {
    std::vector<double> out(size_t(batch) * heads * len * d);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < len; ++i)
          for (int e = 0; e < d; ++e)
            out[((size_t(b) * heads + h) * len + i) * d + e] =
                x[((size_t(b) * len + i) * parts + part) * hd + h * d + e];
    return out;
  };
  Buffer b_qkv = dev.allocate(qkv.size() * 4, "qkv"), b_dqkv = dev.allocate(qkv.size() * 4, "dqkv");
  Buffer b_o = dev.allocate(d_o.size() * 4, "o"), b_do = dev.allocate(d_o.size() * 4, "d_o");
  Buffer lse = dev.allocate(size_t(batch) * heads * len * 4, "lse");
  Buffer delta = dev.allocate(size_t(batch) * heads * len * 4, "delta");
  Buffer key_len = dev.allocate(batch * 4, "key_len");
  Buffer scalars = dev.allocate(sizeof(StepScalars), "scalars", MemoryKind::host);
  StepScalars st;
  st.seed = s.seed, st.step = s.step;
  std::memcpy(scalars.mapped(), &st, sizeof st);
  dev.upload(b_qkv, qkv), dev.upload(b_do, d_o), dev.upload(key_len, s.key_len);
  const uint64_t part_bytes = uint64_t{hd} * 4;
  REQUIRE(part_bytes % dev.info().min_storage_offset_alignment == 0);
  auto part = [&](const Buffer& b, int p) {
    return b.ref().slice(p * part_bytes, b.size() - p * part_bytes);
  };
  ops::AttentionArgs a;
  a.batch = batch, a.heads = heads, a.len_q = len, a.len_k = len, a.d_k = d, a.d_v = d;
  a.q = part(b_qkv, 0), a.k = part(b_qkv, 1), a.v = part(b_qkv, 2), a.o = b_o, a.lse = lse;
  ops::AttentionLayout fused{uint32_t(len * 3 * hd), uint32_t(d), uint32_t(3 * hd)};
  a.q_layout = a.k_layout = a.v_layout = fused;
  a.o_layout = {uint32_t(len * hd), uint32_t(d), uint32_t(hd)};
  a.key_len = key_len, a.causal = true, a.dropout_p = s.dropout_p, a.scalars = scalars;
  a.tiles = on_path(path);
  Recorder rec(dev);
  uint32_t poison;
  std::memcpy(&poison, &test::k_poison, 4);
  rec.fill(b_o, poison), rec.fill(b_dqkv, poison);
  ops::attention_forward(dev, rec, a);
  ops::attention_backward(
      dev, rec,
      {a, b_do, part(b_dqkv, 0), part(b_dqkv, 1), part(b_dqkv, 2), delta, a.tiles, a.tiles});
  rec.finish().run();

  auto q = gather(qkv, 0, 3), k = gather(qkv, 1, 3), v = gather(qkv, 2, 3);
  auto want = ref::attention_forward(s, q, k, v);
  auto grads = ref::attention_backward(s, q, k, v, gather(d_o, 0, 1));
  auto o = dev.download<float>(b_o, d_o.size());
  auto dqkv = dev.download<float>(b_dqkv, qkv.size());
  auto as_float = [](const std::vector<double>& x) {
    return std::vector<float>(x.begin(), x.end());
  };
  CHECK(test::tolerance_ratio(as_float(gather(o, 0, 1)), want.o, 2e-5, 1e-4) <= 1.0);
  CHECK(test::tolerance_ratio(as_float(gather(dqkv, 0, 3)), grads.d_q, 1e-4, 1e-3) <= 1.0);
  CHECK(test::tolerance_ratio(as_float(gather(dqkv, 1, 3)), grads.d_k, 1e-4, 1e-3) <= 1.0);
  CHECK(test::tolerance_ratio(as_float(gather(dqkv, 2, 3)), grads.d_v, 1e-4, 1e-3) <= 1.0);
}

}  // namespace

VKF_TEST_CASE("attention reads and writes strided [batch, len, heads * d] layouts",
              "[shaders][attention]") {
  for (Path path : paths()) check_strided(path);
}

VKF_TEST_CASE("a recorded attention replays with a new dropout seed", "[shaders][attention]") {
  Device& dev = test::device();
  ref::AttentionShape s;
  s.batch = 2, s.heads = 2, s.len_q = 9, s.len_k = 11, s.d_k = 16, s.d_v = 16;
  s.dropout_p = 0.3f, s.step = 1, s.tensor_id = 3;
  std::mt19937 rng(99);
  ref::AttentionRun run(dev, {s, DType::f32}, rng);
  const ref::AttentionTolerance tol = ref::attention_tolerance(DType::f32);
  for (Path path : paths()) {
    INFO(path_name(path));
    Recorder rec(dev);
    ops::attention_forward(dev, rec, run.forward_args(on_path(path)));
    Sequence seq = rec.finish();
    std::vector<float> first;
    for (uint32_t seed : {11u, 12u}) {
      run.set_dropout_stream(seed);  // the reference draws the new seed's mask too
      seq.run();
      for (const ref::Comparison& cmp : run.compare_forward(tol)) {
        INFO(cmp.describe());
        CHECK(cmp.ok());
      }
      const std::vector<float> o = run.o();
      if (first.empty())
        first = o;
      else
        CHECK(o != first);
    }
  }
}

VKF_TEST_CASE("attention on a share of a batch drops what the whole batch would",
              "[shaders][attention][dropout]") {
  Device& dev = test::device();
  const int first = 2, count = 2;
  for (int len_k : {11, 12}) {  // 12: weight rows start on Philox blocks (the aligned variant)
    ref::AttentionShape whole;
    whole.batch = 5, whole.heads = 2, whole.len_q = 9, whole.len_k = len_k;
    whole.d_k = whole.d_v = 16;
    whole.key_len = {len_k, 5, len_k - 1, 7, 1};
    whole.dropout_p = 0.3f, whole.seed = 4, whole.step = 2, whole.tensor_id = 6;
    ref::AttentionShape part = whole;
    part.batch = count;
    part.key_len = {whole.key_len.begin() + first, whole.key_len.begin() + first + count};
    std::mt19937 rng(21);
    const ref::AttentionInputs in = ref::random_attention_inputs({whole, DType::f32}, rng);
    // Sentence b of every tensor is one contiguous run: [batch, heads, len, d].
    auto rows = [&](const std::vector<float>& x, size_t per_sentence) {
      return std::vector<float>(x.begin() + ptrdiff_t(first * per_sentence),
                                x.begin() + ptrdiff_t((first + count) * per_sentence));
    };
    const size_t nq = count_q(whole) / 5, nk = count_k(whole) / 5, nv = count_v(whole) / 5,
                 no = count_o(whole) / 5;
    for (Path path : paths()) {
      INFO(path_name(path) << ", len_k " << len_k);
      auto run = [&](const ref::AttentionShape& s, const ref::AttentionInputs& x,
                     uint32_t dropout_row) {
        ref::AttentionRun r(dev, {s, DType::f32}, x);
        r.set_dropout_stream(s.seed, dropout_row);
        return run_outputs(r, on_path(path));
      };
      const auto all = run(whole, in, 0);
      const ref::AttentionInputs sub{rows(in.q, nq), rows(in.k, nk), rows(in.v, nv),
                                     rows(in.d_o, no)};
      const auto got = run(part, sub, first);
      CHECK(got[0] == rows(all[0], no));  // the same mask, so the same bits
      CHECK(got[1] == rows(all[1], nq));
      CHECK(got[2] == rows(all[2], nk));
      CHECK(got[3] == rows(all[3], nv));
      CHECK(run(part, sub, 0)[0] != rows(all[0], no));  // the first sentences' mask differs
    }
  }
}

namespace {

// Central differences of L = sum(O * G) through the double reference forward.
std::vector<double> numeric_grad(const ref::AttentionShape& s, std::vector<double> q,
                                 std::vector<double> k, std::vector<double> v,
                                 const std::vector<double>& g, int which, double eps) {
  auto loss = [&] {
    auto f = ref::attention_forward(s, q, k, v);
    double l = 0.0;
    for (size_t i = 0; i < f.o.size(); ++i) l += f.o[i] * g[i];
    return l;
  };
  std::vector<double>& x = which == 0 ? q : which == 1 ? k : v;
  std::vector<double> grad(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double keep = x[i];
    x[i] = keep + eps;
    double up = loss();
    x[i] = keep - eps;
    double down = loss();
    x[i] = keep;
    grad[i] = (up - down) / (2 * eps);
  }
  return grad;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

ref::AttentionShape tiny_shape() {
  ref::AttentionShape s;
  s.batch = 2, s.heads = 2, s.len_q = 5, s.len_k = 6, s.d_k = 16, s.d_v = 8;
  s.causal = true, s.key_len = {6, 3}, s.q_len = {5, 4}, s.dropout_p = 0.25f;
  s.seed = 77, s.step = 2, s.tensor_id = 9;
  return s;
}

}  // namespace

TEST_CASE("attention reference backward matches finite differences", "[attention][reference]") {
  for (bool causal : {false, true}) {
    ref::AttentionShape s = tiny_shape();
    s.causal = causal;
    std::mt19937 rng(5);
    const ref::AttentionInputs in = ref::random_attention_inputs({s, DType::f32}, rng);
    auto q = to_double(in.q), k = to_double(in.k), v = to_double(in.v), g = to_double(in.d_o);
    auto grads = ref::attention_backward(s, q, k, v, g);
    CHECK(max_abs_diff(grads.d_q, numeric_grad(s, q, k, v, g, 0, 1e-6)) < 1e-8);
    CHECK(max_abs_diff(grads.d_k, numeric_grad(s, q, k, v, g, 1, 1e-6)) < 1e-8);
    CHECK(max_abs_diff(grads.d_v, numeric_grad(s, q, k, v, g, 2, 1e-6)) < 1e-8);
  }
}

VKF_TEST_CASE("attention GPU backward matches finite differences of the double forward",
              "[shaders][attention]") {
  Device& dev = test::device();
  ref::AttentionShape s = tiny_shape();
  std::mt19937 rng(6);
  const ref::AttentionInputs in = ref::random_attention_inputs({s, DType::f32}, rng);
  auto q = to_double(in.q), k = to_double(in.k), v = to_double(in.v), G = to_double(in.d_o);
  for (Path path : paths()) {
    INFO(path_name(path));
    const ref::AttentionRun run(dev, {s, DType::f32}, in);
    const auto [o, d_q, d_k, d_v] = run_outputs(run, on_path(path));
    // fp32 gradients of O(1) against double central differences (truncation ~1e-10).
    CHECK(test::tolerance_ratio(d_q, numeric_grad(s, q, k, v, G, 0, 1e-5), 2e-5, 1e-4) <= 1.0);
    CHECK(test::tolerance_ratio(d_k, numeric_grad(s, q, k, v, G, 1, 1e-5), 2e-5, 1e-4) <= 1.0);
    CHECK(test::tolerance_ratio(d_v, numeric_grad(s, q, k, v, G, 2, 1e-5), 2e-5, 1e-4) <= 1.0);
  }
}

VKF_TEST_CASE("attention picks the rows path on CPU devices only", "[shaders][attention]") {
  const DeviceInfo& info = test::device().info();
  for (auto k : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                 ops::AttentionKernel::backward_q}) {
    ops::AttentionTiles t = ops::attention_default_tiles(info, k, 64, 64);
    CHECK(t.path == (info.is_cpu() && paths().size() > 1 ? Path::rows : Path::tiled));
    CHECK(t.rows >= 1);
    CHECK(t.workgroup >= 1);  // the tiled fields stay filled in for a forced tiled path
  }
}

VKF_TEST_CASE("attention arguments are checked", "[shaders][attention]") {
  Device& dev = test::device();
  ref::AttentionShape s;
  s.batch = 2, s.heads = 2, s.len_q = 4, s.len_k = 4, s.d_k = 16, s.d_v = 16;
  const ref::AttentionRun g(
      dev, {s, DType::f32},
      ref::AttentionInputs{std::vector<float>(count_q(s)), std::vector<float>(count_k(s)),
                           std::vector<float>(count_v(s)), std::vector<float>(count_o(s))});
  Recorder rec(dev);
  auto a = g.forward_args({});
  a.d_k = 129;
  REQUIRE_THROWS_WITH(ops::attention_forward(dev, rec, a), Catch::Contains("head dims"));
  a = g.forward_args({});
  a.len_q = 5;
  REQUIRE_THROWS_WITH(ops::attention_forward(dev, rec, a), Catch::Contains("q needs"));
  a = g.forward_args({512, 128, 128, Path::tiled});
  // Over shared memory; on a device of fewer than 512 invocations (a profile's) the workgroup
  // is refused first.
  REQUIRE_THROWS_WITH(ops::attention_forward(dev, rec, a),
                      dev.info().max_workgroup_invocations >= 512
                          ? Catch::Contains("shared memory")
                          : Catch::Contains("not valid on"));
  if (paths().size() > 1) {
    a = g.forward_args({0, 0, 0, Path::rows, 9});
    REQUIRE_THROWS_WITH(ops::attention_forward(dev, rec, a), Catch::Contains("rows per lane"));
  }
  a = g.forward_args({});
  a.dropout_p = 0.5f, a.scalars = {};
  REQUIRE_THROWS_WITH(ops::attention_forward(dev, rec, a), Catch::Contains("StepScalars"));
}
