// Embedding forward (sinusoid or learned positions, batch layout or explicit positions, padding,
// dropout) and its deterministic scatter-add backward against the double reference, with the
// activations (out, dout) in f32 and in f16 storage.
#include <cmath>
#include <cstring>
#include <random>

#include "engine/ops/embedding.h"
#include "engine/step_scalars.h"
#include "reference/embedding.h"
#include "reference/layer_norm.h"
#include "reference/stored.h"
#include "tests/support/bare_device.h"
#include "tests/support/f16_storage.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

struct Case {
  ref::EmbeddingShape shape;
  bool learned = false;
  float p = 0.0f;
  uint32_t distinct = 0;     // token ids drawn from [0, distinct) (repeats when small); 0 = vocab
  DType dtype = DType::f32;  // storage of out and dout
  bool bad_ids = false;      // some ids outside [0, vocab): ignored like padding
  DType table_dtype = DType::f32;  // storage of the token table the forward reads
};

template <typename T>
Buffer upload(Device& dev, const std::vector<T>& v, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(v.size(), 1) * 4, what);
  dev.upload(b, v);
  return b;
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

struct Data {
  std::vector<int32_t> tokens, positions;
  std::vector<float> table, pos_table, dout, dtable0, dpos0;
};

Data make_data(const Case& c, uint32_t seed) {
  const auto& s = c.shape;
  Data d;
  std::mt19937 rng(seed);
  uint32_t distinct = c.distinct ? c.distinct : s.vocab;
  for (uint32_t t = 0; t < s.tokens; ++t) {
    int32_t id = int32_t(rng() % distinct);
    if (rng() % 5 == 0 && s.pad_id >= 0) id = s.pad_id;
    if (c.bad_ids && t % 7 == 3) id = t % 2 ? int32_t(s.vocab + t) : -2;
    d.tokens.push_back(id);
    d.positions.push_back(int32_t(rng() % (s.max_len ? s.max_len : 300)));
  }
  d.table = ref::stored(test::random_floats(size_t{s.vocab} * s.d, seed + 1), c.table_dtype);
  if (c.learned) d.pos_table = test::random_floats(size_t{s.max_len} * s.d, seed + 2);
  d.dout = ref::stored(test::random_floats(size_t{s.tokens} * s.d, seed + 3), c.dtype);
  d.dtable0 = test::random_floats(size_t{s.vocab} * s.d, seed + 4);
  if (c.learned) d.dpos0 = test::random_floats(size_t{s.max_len} * s.d, seed + 5);
  return d;
}

struct Got {
  std::vector<float> out, dtable, dpos;
};

// dropout_row: the batch row (sentence) these tokens start at within a larger batch.
Got run_gpu(const Case& c, const Data& data, uint32_t step = 4, uint32_t dropout_row = 0) {
  Device& dev = test::device();
  const auto& s = c.shape;
  const size_t n = size_t{s.tokens} * s.d;
  Buffer tokens = upload(dev, data.tokens, "tokens"), pos = upload(dev, data.positions, "pos");
  Buffer table = ref::upload_stored(dev, data.table, c.table_dtype, "table");
  Buffer pos_table = c.learned ? upload(dev, data.pos_table, "pos_table") : Buffer{};
  Buffer out =
      ref::upload_stored(dev, std::vector<float>(n, test::poison(c.dtype)), c.dtype, "out");
  Buffer dout = ref::upload_stored(dev, data.dout, c.dtype, "dout");
  Buffer dtable = upload(dev, data.dtable0, "dtable");
  Buffer dpos = c.learned ? upload(dev, data.dpos0, "dpos") : Buffer{};
  Buffer scratch =
      dev.allocate(ops::embedding_backward_scratch_bytes(s.vocab, s.max_len, s.tokens), "scratch");
  dev.upload(scratch, std::vector<uint32_t>(scratch.size() / 4, 0xDEADBEEFu));
  Buffer st = step_buffer(dev, 17, step, dropout_row);

  Recorder rec(dev);
  ops::EmbeddingForwardArgs f;
  f.dtype = c.dtype;
  f.tokens = tokens;
  f.positions = pos;
  f.table = table;
  f.table_dtype = c.table_dtype;
  if (c.learned) f.pos_table = pos_table;
  f.out = out;
  f.step = st;
  f.tokens_count = s.tokens;
  f.d = s.d;
  f.vocab = s.vocab;
  f.len = s.len;
  f.max_len = s.max_len;
  f.pad_id = s.pad_id;
  f.scale = float(s.scale);
  f.dropout = c.p;
  f.tensor_id = 3;
  ops::embedding_forward(dev, rec, f);

  ops::EmbeddingBackwardArgs b;
  b.dout_dtype = c.dtype;
  b.tokens = tokens;
  b.positions = pos;
  b.dout = dout;
  b.dtable = dtable;
  if (c.learned) b.dpos_table = dpos;
  b.scratch = scratch;
  b.step = st;
  b.tokens_count = s.tokens;
  b.d = s.d;
  b.vocab = s.vocab;
  b.len = s.len;
  b.max_len = s.max_len;
  b.pad_id = s.pad_id;
  b.scale = float(s.scale);
  b.dropout = c.p;
  b.tensor_id = 3;
  ops::embedding_backward(dev, rec, b);
  rec.finish().run();

  Got g;
  g.out = ref::download_stored(dev, out, n, c.dtype);
  g.dtable = dev.download<float>(dtable, size_t{s.vocab} * s.d);
  if (c.learned) g.dpos = dev.download<float>(dpos, size_t{s.max_len} * s.d);
  return g;
}

void check_case(const Case& c, uint32_t seed) {
  const auto& s = c.shape;
  INFO("tokens " << s.tokens << " d " << s.d << " vocab " << s.vocab << " len " << s.len
                 << " learned " << c.learned << " p " << c.p << " distinct " << c.distinct << " "
                 << dtype_name(c.dtype) << " table " << dtype_name(c.table_dtype)
                 << (c.bad_ids ? " bad ids" : ""));
  Data data = make_data(c, seed);
  const uint32_t n = s.tokens * s.d;
  auto mask = ref::dropout_mask(n, c.p, 17, 4, 3);
  auto pos_table = ref::to_double(data.pos_table);
  auto want = ref::embedding_forward(s, data.tokens, data.positions, ref::to_double(data.table),
                                     pos_table, mask);
  auto want_dtable = ref::to_double(data.dtable0);
  auto want_dpos = ref::to_double(data.dpos0);
  ref::embedding_backward(s, data.tokens, data.positions, ref::to_double(data.dout), mask,
                          want_dtable, c.learned ? &want_dpos : nullptr);
  Got got = run_gpu(c, data);
  // sin/cos of fp32 angles up to ~300 rad: absolute error ~ angle * 2^-24 plus the driver's sin.
  // f16 storage rounds out once more (2^-11 relative; 2^-25 absolute below the normal range).
  // dtable sums the dout the kernel reads (rounded in f16, as the reference's), so its tolerance
  // does not depend on the dtype.
  CHECK(test::tolerance_ratio(got.out, want, 1e-4, c.dtype == DType::f16 ? 1e-3 : 1e-5) <= 1.0);
  for (uint32_t t = 0; t < s.tokens; ++t) {
    const int32_t id = data.tokens[t];
    if (id == s.pad_id || id < 0 || uint32_t(id) >= s.vocab)
      for (uint32_t k = 0; k < s.d; ++k) REQUIRE(got.out[size_t{t} * s.d + k] == 0.0f);
  }
  CHECK(test::tolerance_ratio(got.dtable, want_dtable, 1e-5, 1e-5) <= 1.0);
  if (c.learned) CHECK(test::tolerance_ratio(got.dpos, want_dpos, 1e-5, 1e-5) <= 1.0);
}

ref::EmbeddingShape shape(uint32_t tokens, uint32_t d, uint32_t vocab, uint32_t len,
                          uint32_t max_len, int32_t pad) {
  ref::EmbeddingShape s;
  s.tokens = tokens;
  s.d = d;
  s.vocab = vocab;
  s.len = len;
  s.max_len = max_len;
  s.pad_id = pad;
  s.scale = std::sqrt(double(d));
  return s;
}

}  // namespace

VKF_TEST_CASE("embedding forward and backward match the reference", "[shaders][embedding]") {
  auto [tokens, d, vocab, len] = GENERATE(table<uint32_t, uint32_t, uint32_t, uint32_t>(
      {{1, 1, 5, 1}, {15, 7, 50, 5}, {33, 64, 200, 11}, {40, 100, 30, 0}, {7, 513, 10, 7}}));
  for (bool learned : {false, true})
    for (float p : {0.0f, 0.2f}) {
      uint32_t max_len = learned ? (len ? len : 64) : 0;
      check_case({shape(tokens, d, vocab, len, max_len, 1), learned, p, 0}, tokens + d + learned);
    }
}

VKF_TEST_CASE("embedding with f16 storage matches the reference", "[shaders][embedding][f16]") {
  if (!test::has_storage16()) return;
  // One token; widths that 4 (the forward's elements an invocation) and 128 (the backward's
  // columns a workgroup) do not divide; padding, ids outside the vocabulary, repeated tokens.
  auto [tokens, d, vocab, len] =
      GENERATE(table<uint32_t, uint32_t, uint32_t, uint32_t>({{1, 1, 5, 1},
                                                              {1, 300, 7, 0},
                                                              {15, 7, 50, 5},
                                                              {33, 64, 200, 11},
                                                              {40, 100, 30, 0},
                                                              {7, 513, 10, 7}}));
  for (bool learned : {false, true})
    for (float p : {0.0f, 0.2f}) {
      uint32_t max_len = learned ? (len ? len : 64) : 0;
      Case c{shape(tokens, d, vocab, len, max_len, 1), learned, p, 0, DType::f16};
      check_case(c, tokens + d + learned);
      c.bad_ids = true;
      check_case(c, tokens + d + learned + 1);
    }
  check_case({shape(600, 16, 40, 30, 0, 0), false, 0.1f, 4, DType::f16}, 1);
  check_case({shape(257, 9, 20, 0, 300, 2), true, 0.3f, 6, DType::f16}, 3);
}

// The model's fp16 weights (issue 15): the forward reads an fp16 token table, with out in either
// storage type. The reference reads the same rounded table, so the tolerances are those above.
VKF_TEST_CASE("embedding forward reads an f16 token table", "[shaders][embedding][f16]") {
  if (!test::has_storage16()) return;
  auto [tokens, d, vocab, len] = GENERATE(table<uint32_t, uint32_t, uint32_t, uint32_t>(
      {{1, 1, 5, 1}, {15, 7, 50, 5}, {40, 100, 30, 0}, {7, 513, 10, 7}}));
  for (DType out : {DType::f32, DType::f16})
    for (bool learned : {false, true}) {
      const uint32_t max_len = learned ? (len ? len : 64) : 0;
      Case c{shape(tokens, d, vocab, len, max_len, 1), learned, 0.2f, 0, out, true, DType::f16};
      check_case(c, tokens + d + learned + 7);
    }
}

// The f16 kernels do the f32 kernels' arithmetic on the values they load: on the same inputs
// (dout rounded to f16), out is the f32 kernel's rounded to f16 (within one f16 ulp: 2^-10
// relative, or 2^-24 below the normal range) and the table gradients agree to fp32 rounding.
// This stands for the finite-difference check of the f16 backward, which the f32 kernel passes.
VKF_TEST_CASE("embedding with f16 storage agrees with f32 on the same inputs",
              "[shaders][embedding][f16]") {
  if (!test::has_storage16()) return;
  for (bool learned : {false, true}) {
    INFO("learned " << learned);
    Case half{shape(257, 37, 20, 0, 300, 2), learned, 0.3f, 6, DType::f16, true};
    if (!learned) half.shape.max_len = 0;
    Case full = half;
    full.dtype = DType::f32;
    Data data = make_data(half, 8);  // dout rounded to f16, for both
    Got h = run_gpu(half, data), f = run_gpu(full, data);
    CHECK(test::tolerance_ratio(h.out, ref::to_double(f.out), 6e-8, 1e-3) <= 1.0);
    CHECK(test::tolerance_ratio(h.dtable, ref::to_double(f.dtable), 1e-7, 1e-6) <= 1.0);
    if (learned) CHECK(test::tolerance_ratio(h.dpos, ref::to_double(f.dpos), 1e-7, 1e-6) <= 1.0);
  }
}

VKF_TEST_CASE("embedding backward accumulates repeated tokens", "[shaders][embedding]") {
  // Few distinct ids over many tokens: large buckets; one id only: a single bucket.
  check_case({shape(600, 16, 40, 30, 0, 0), false, 0.1f, 4}, 1);
  check_case({shape(500, 8, 3, 0, 0, -1), false, 0.0f, 1}, 2);
  check_case({shape(257, 9, 20, 0, 300, 2), true, 0.3f, 6}, 3);
}

VKF_TEST_CASE("embedding backward at vocabulary scale", "[shaders][embedding]") {
  check_case({shape(2048, 8, 37000, 64, 0, 0), false, 0.1f, 0}, 4);
}

VKF_TEST_CASE("embedding backward is deterministic run to run", "[shaders][embedding]") {
  Case c{shape(300, 33, 12, 20, 0, 0), false, 0.1f, 0};
  Data data = make_data(c, 9);
  Got a = run_gpu(c, data), b = run_gpu(c, data);
  CHECK(a.out == b.out);
  CHECK(a.dtable == b.dtable);
  Got other = run_gpu(c, data, 5);  // another step: another mask
  CHECK(other.out != a.out);
}

VKF_TEST_CASE("embedding on a share of a batch drops what the whole batch would",
              "[shaders][embedding][dropout]") {
  // 5 sentences of 3 tokens, d = 37: a sentence's mask does not start on a Philox block.
  const uint32_t sentences = 5, len = 3, d = 37, first = 2, count = 2;
  for (bool learned : {false, true}) {
    INFO((learned ? "learned positions" : "sinusoid"));
    Case whole;
    whole.shape.tokens = sentences * len;
    whole.shape.d = d;
    whole.shape.vocab = 23;
    whole.shape.len = len;
    whole.shape.max_len = 8;
    whole.shape.pad_id = 0;
    whole.shape.scale = 2.0;
    whole.learned = learned;
    whole.p = 0.3f;
    Data all = make_data(whole, 5);
    // The share's rows of dout only, so that the whole batch's table gradient is the share's.
    const size_t lo = size_t{first} * len * d, hi = lo + size_t{count} * len * d;
    for (size_t i = 0; i < all.dout.size(); ++i)
      if (i < lo || i >= hi) all.dout[i] = 0.0f;
    const Got want = run_gpu(whole, all);

    Case part = whole;
    part.shape.tokens = count * len;
    Data sub = all;
    sub.tokens.assign(all.tokens.begin() + first * len, all.tokens.begin() + (first + count) * len);
    sub.positions.assign(all.positions.begin() + first * len,
                         all.positions.begin() + (first + count) * len);
    sub.dout.assign(all.dout.begin() + ptrdiff_t(lo), all.dout.begin() + ptrdiff_t(hi));
    const Got got = run_gpu(part, sub, 4, first);
    CHECK(got.out ==
          std::vector<float>(want.out.begin() + ptrdiff_t(lo), want.out.begin() + ptrdiff_t(hi)));
    CHECK(got.dtable == want.dtable);  // the same masks on the same gradients
    if (learned) CHECK(got.dpos == want.dpos);
    const Got unshifted = run_gpu(part, sub, 4, 0);
    CHECK(unshifted.out != got.out);  // the first sentences' mask would differ
  }
}

VKF_TEST_CASE("embedding reference gradient matches finite differences", "[shaders][embedding]") {
  Case c{shape(12, 5, 4, 3, 3, 0), true, 0.25f, 0};
  const auto& s = c.shape;
  Data data = make_data(c, 21);
  auto table = ref::to_double(data.table), pos_table = ref::to_double(data.pos_table);
  auto dout = ref::to_double(data.dout);
  auto mask = ref::dropout_mask(s.tokens * s.d, c.p, 17, 4, 3);
  auto loss = [&] {
    auto out = ref::embedding_forward(s, data.tokens, data.positions, table, pos_table, mask);
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += out[i] * dout[i];
    return l;
  };
  std::vector<double> dtable(table.size(), 0.0), dpos(pos_table.size(), 0.0);
  ref::embedding_backward(s, data.tokens, data.positions, dout, mask, dtable, &dpos);
  const double h = 1e-6;
  auto fd = [&](std::vector<double>& v, size_t i) {
    double keep = v[i];
    v[i] = keep + h;
    double up = loss();
    v[i] = keep - h;
    double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t i = 0; i < table.size(); ++i) CHECK(std::fabs(fd(table, i) - dtable[i]) < 1e-6);
  for (size_t i = 0; i < pos_table.size(); ++i) CHECK(std::fabs(fd(pos_table, i) - dpos[i]) < 1e-6);
  // The pad id's row gets no gradient.
  for (uint32_t k = 0; k < s.d; ++k) CHECK(dtable[size_t(s.pad_id) * s.d + k] == 0.0);
}

VKF_TEST_CASE("embedding rejects bad buffers", "[shaders][embedding]") {
  Device& dev = test::device();
  Buffer b = dev.allocate(64 * 4, "b");
  Recorder rec(dev);
  ops::EmbeddingForwardArgs f;
  f.tokens = f.positions = f.table = f.out = b;
  f.tokens_count = 8;
  f.d = 4;
  f.vocab = 100;  // 400 floats do not fit
  f.len = 8;
  REQUIRE_THROWS_WITH(ops::embedding_forward(dev, rec, f), Catch::Contains("table"));
  ops::EmbeddingBackwardArgs bw;
  bw.tokens = bw.dout = bw.dtable = b;
  bw.tokens_count = 8;
  bw.d = 4;
  bw.vocab = 16;
  bw.len = 8;
  REQUIRE_THROWS_WITH(ops::embedding_backward(dev, rec, bw), Catch::Contains("scratch"));
  // f16 activations are sized in halves: [8, 16] fits in 64 floats, [8, 17] does not.
  f.vocab = 2;
  f.d = 16;
  f.dtype = DType::i32;
  REQUIRE_THROWS_WITH(ops::embedding_forward(dev, rec, f), Catch::Contains("not supported"));
  if (dev.info().storage16) {
    f.dtype = DType::f16;
    CHECK_NOTHROW(ops::embedding_forward(dev, rec, f));
    f.d = 17;
    REQUIRE_THROWS_WITH(ops::embedding_forward(dev, rec, f), Catch::Contains("needs 136 f16"));
    bw.vocab = 1;
    bw.d = 17;
    bw.dout_dtype = DType::f16;
    REQUIRE_THROWS_WITH(ops::embedding_backward(dev, rec, bw), Catch::Contains("needs 136 f16"));
  }
}

VKF_TEST_CASE("embedding refuses f16 on a device without 16-bit storage",
              "[shaders][embedding][f16]") {
  test::BareDevice bare;
  Device& dev = bare.get();
  REQUIRE_FALSE(dev.info().storage16);
  Buffer b = dev.allocate(64 * 4, "b");
  Recorder rec(dev);
  ops::EmbeddingForwardArgs f;
  f.dtype = DType::f16;
  f.tokens = f.table = f.out = b;
  f.tokens_count = 8;
  f.d = 4;
  f.vocab = 4;
  f.len = 8;
  REQUIRE_THROWS_WITH(ops::embedding_forward(dev, rec, f), Catch::Contains("16-bit storage"));
  ops::EmbeddingBackwardArgs bw;
  bw.dout_dtype = DType::f16;
  bw.tokens = bw.dout = bw.dtable = bw.scratch = b;
  bw.tokens_count = 8;
  bw.d = 4;
  bw.vocab = 4;
  bw.len = 8;
  REQUIRE_THROWS_WITH(ops::embedding_backward(dev, rec, bw), Catch::Contains("16-bit storage"));
}

VKF_TEST_CASE("embedding over more than 65535 tokens", "[shaders][embedding]") {
  // One accumulation workgroup per sorted slot: 70000 groups fold over the grid's y dimension.
  check_case({shape(70000, 2, 5000, 100, 0, 0), false, 0.1f, 0}, 5);
  if (test::device().info().storage16)
    check_case({shape(70000, 2, 5000, 100, 0, 0), false, 0.1f, 0, DType::f16}, 6);
}
