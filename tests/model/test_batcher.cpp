// Batching invariants: budget, every example once per epoch, determinism per (seed, epoch),
// resume at a position, and the token conventions of docs/design.md.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <numeric>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "engine/error.h"
#include "model/data/batcher.h"
#include "tests/support/temp_dir.h"

using namespace vkf;
using namespace vkf::model;

namespace {

// `count` examples with lengths 1..max_pieces (skewed short, like real text) and ids >= 4, so no
// piece can be mistaken for a special token.
ExampleStore random_store(size_t count, int max_pieces, uint32_t seed = 3) {
  ExampleStore store;
  uint32_t state = seed;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  std::vector<int32_t> src, tgt;
  for (size_t i = 0; i < count; ++i) {
    int n = 1 + int(next() % uint32_t(max_pieces));
    if (next() % 2) n = 1 + n / 3;
    int m = std::clamp(n + int(next() % 7) - 3, 1, max_pieces);
    src.clear();
    tgt.clear();
    for (int k = 0; k < n; ++k) src.push_back(int32_t(4 + next() % 1000));
    for (int k = 0; k < m; ++k) tgt.push_back(int32_t(4 + next() % 1000));
    store.add(src, tgt, int64_t(i + 1));
  }
  return store;
}

std::vector<std::vector<uint32_t>> epoch_examples(const Batcher& batcher, uint64_t epoch) {
  auto plan = batcher.plan(epoch);
  std::vector<std::vector<uint32_t>> batches;
  for (size_t b = 0; b < plan.size(); ++b) {
    auto ex = plan.examples(b);
    batches.emplace_back(ex.begin(), ex.end());
  }
  return batches;
}

}  // namespace

TEST_CASE("default buckets are multiples of 8 ending at max_len", "[model][data][batcher]") {
  CHECK(default_buckets(256) ==
        std::vector<int>{8, 16, 24, 32, 40, 48, 56, 64, 80, 104, 136, 176, 224, 256});
  CHECK(default_buckets(20) == std::vector<int>{8, 16, 20});
  CHECK(default_buckets(8) == std::vector<int>{8});
}

TEST_CASE("batches respect the padded token budget and hold every example once",
          "[model][data][batcher]") {
  auto store = random_store(3000, 120);
  auto [max_tokens, shared] = GENERATE(table<int64_t, bool>(
      {{2000, false}, {2000, true}, {25000, false}, {130, false}, {777, true}}));
  INFO("max_tokens " << max_tokens << " shared_length " << shared);
  BatcherOptions options{.max_tokens = max_tokens, .max_len = 128, .shared_length = shared};
  Batcher batcher(store, {}, options);
  for (uint64_t epoch : {0u, 1u, 5u}) {
    auto plan = batcher.plan(epoch);
    REQUIRE(plan.size() == batcher.batches_per_epoch());
    std::vector<uint32_t> seen;
    auto shapes = batcher.shapes();
    for (size_t b = 0; b < plan.size(); ++b) {
      auto shape = plan.shape(b);
      CHECK(int64_t(shape.batch_size) * shape.src_len <= max_tokens);
      CHECK(int64_t(shape.batch_size) * shape.tgt_len <= max_tokens);
      if (shared) CHECK(shape.src_len == shape.tgt_len);
      CHECK(std::find(shapes.begin(), shapes.end(), shape) != shapes.end());
      // Full batches are multiples of 8 rows whenever 8 rows fit.
      for (uint32_t i : plan.examples(b)) {
        CHECK(int(store.source(i).size()) + 1 <= shape.src_len);
        CHECK(int(store.target(i).size()) + 1 <= shape.tgt_len);
        seen.push_back(i);
      }
    }
    std::sort(seen.begin(), seen.end());
    std::vector<uint32_t> all(store.size());
    std::iota(all.begin(), all.end(), 0u);
    CHECK(seen == all);
  }
}

TEST_CASE("batch sizes are rounded to multiples of 8 and capped", "[model][data][batcher]") {
  auto store = random_store(2000, 60);
  Batcher batcher(store, {}, {.max_tokens = 1000, .max_len = 64});
  int full_batches = 0;
  for (auto shape : batcher.shapes()) {
    // The full batch of a bucket: the budget's rows rounded down to a multiple of 8; the last
    // batch of a bucket holds the rest.
    int rows = 1000 / std::max(shape.src_len, shape.tgt_len);
    int full = rows >= 8 ? rows - rows % 8 : rows;
    CHECK(shape.batch_size <= full);
    if (shape.batch_size == full) ++full_batches;
  }
  CHECK(full_batches > 0);
  Batcher capped(store, {}, {.max_tokens = 25000, .max_len = 64, .max_batch_size = 50});
  for (auto shape : capped.shapes()) CHECK(shape.batch_size <= 50);
}

TEST_CASE("batch order is a function of seed and epoch", "[model][data][batcher]") {
  auto store = random_store(2000, 80);
  BatcherOptions options{.max_tokens = 1500, .max_len = 96, .seed = 42};
  Batcher a(store, {}, options), b(store, {}, options);
  CHECK(epoch_examples(a, 3) == epoch_examples(b, 3));
  CHECK(epoch_examples(a, 0) == epoch_examples(a, 0));
  CHECK(epoch_examples(a, 0) != epoch_examples(a, 1));
  options.seed = 43;
  Batcher c(store, {}, options);
  CHECK(epoch_examples(a, 3) != epoch_examples(c, 3));

  options.shuffle = false;
  Batcher ordered(store, {}, options);
  auto first = epoch_examples(ordered, 0);
  CHECK(first == epoch_examples(ordered, 7));
  for (const auto& batch : first) CHECK(std::is_sorted(batch.begin(), batch.end()));
}

TEST_CASE("a stream resumed at a position gives exactly the remaining batches",
          "[model][data][batcher]") {
  auto store = random_store(1500, 60);
  Batcher batcher(store, {}, {.max_tokens = 800, .max_len = 64, .seed = 9});
  const size_t per_epoch = batcher.batches_per_epoch();
  REQUIRE(per_epoch > 10);

  BatchStream full(batcher, {0, 0});
  std::vector<Batch> reference;
  for (size_t i = 0; i < 2 * per_epoch + 3; ++i) reference.push_back(full.next());
  CHECK(full.position() == BatchPosition{2, 3});

  for (BatchPosition start : {BatchPosition{0, 5}, BatchPosition{1, 0}, BatchPosition{1, 7},
                              BatchPosition{0, per_epoch}}) {
    INFO("resume at epoch " << start.epoch << " batch " << start.batch);
    BatchStream resumed(batcher, start);
    size_t offset = start.epoch * per_epoch + start.batch;
    for (size_t i = offset; i < reference.size(); ++i) {
      Batch batch = resumed.next();
      REQUIRE(batch.examples == reference[i].examples);
      REQUIRE(batch.src == reference[i].src);
      REQUIRE(batch.tgt_in == reference[i].tgt_in);
      REQUIRE(batch.tgt_out == reference[i].tgt_out);
    }
  }
  BatchStream at_end(batcher, {0, per_epoch - 1});
  at_end.next();
  CHECK(at_end.position() == BatchPosition{1, 0});
  CHECK_THROWS_WITH(BatchStream(batcher, {0, per_epoch + 1}), Catch::Contains("batches"));
}

TEST_CASE("batches follow the token conventions", "[model][data][batcher]") {
  auto store = random_store(500, 40);
  const SpecialIds ids{.pad = 0, .unk = 1, .bos = 2, .eos = 3};
  Batcher batcher(store, ids, {.max_tokens = 600, .max_len = 48, .seed = 5});
  auto plan = batcher.plan(2);
  for (size_t b = 0; b < plan.size(); ++b) {
    Batch batch = batcher.make_batch(plan, b);
    const auto B = size_t(batch.batch_size), Ls = size_t(batch.src_len), Lt = size_t(batch.tgt_len);
    REQUIRE(batch.src.size() == B * Ls);
    REQUIRE(batch.tgt_in.size() == B * Lt);
    REQUIRE(batch.tgt_out.size() == B * Lt);
    REQUIRE(batch.examples.size() == B);
    int64_t src_tokens = 0, tgt_tokens = 0;
    for (size_t r = 0; r < B; ++r) {
      auto pieces = store.source(batch.examples[r]);
      auto target = store.target(batch.examples[r]);
      // source: pieces, EOS, pad...
      std::vector<int32_t> want_src(pieces.begin(), pieces.end());
      want_src.push_back(ids.eos);
      want_src.resize(Ls, ids.pad);
      // decoder input: BOS, pieces, pad...; target: pieces, EOS, pad...
      std::vector<int32_t> want_in = {ids.bos};
      want_in.insert(want_in.end(), target.begin(), target.end());
      want_in.resize(Lt, ids.pad);
      std::vector<int32_t> want_out(target.begin(), target.end());
      want_out.push_back(ids.eos);
      want_out.resize(Lt, ids.pad);
      auto row = [](const std::vector<int32_t>& v, size_t r_, size_t L) {
        return std::vector<int32_t>(v.begin() + std::ptrdiff_t(r_ * L),
                                    v.begin() + std::ptrdiff_t((r_ + 1) * L));
      };
      REQUIRE(row(batch.src, r, Ls) == want_src);
      REQUIRE(row(batch.tgt_in, r, Lt) == want_in);
      REQUIRE(row(batch.tgt_out, r, Lt) == want_out);
      CHECK(batch.src_lengths[r] == int32_t(pieces.size() + 1));
      CHECK(batch.tgt_lengths[r] == int32_t(target.size() + 1));
      src_tokens += batch.src_lengths[r];
      tgt_tokens += batch.tgt_lengths[r];
    }
    CHECK(batch.src_tokens == src_tokens);
    CHECK(batch.tgt_tokens == tgt_tokens);
    const auto pads = std::count(batch.src.begin(), batch.src.end(), ids.pad);
    CHECK(int64_t(pads) == int64_t(B * Ls) - src_tokens);
  }
  CHECK_THROWS_AS(batcher.make_batch(plan, plan.size()), Error);
}

TEST_CASE("batcher rejects examples and budgets it cannot batch", "[model][data][batcher]") {
  auto store = random_store(100, 60);
  CHECK_THROWS_WITH(Batcher(store, {}, {.max_len = 32}),
                    Catch::Contains("largest bucket (32)") && Catch::Contains("line"));
  CHECK_THROWS_WITH(Batcher(store, {}, {.max_tokens = 40, .max_len = 64}),
                    Catch::Contains("max_tokens"));
  CHECK_THROWS_WITH(Batcher(store, {}, {.buckets = {16, 8, 64}}), Catch::Contains("ascending"));
  Batcher custom(store, {}, {.max_tokens = 5000, .buckets = {12, 30, 61}});
  for (auto shape : custom.shapes()) {
    CHECK((shape.src_len == 12 || shape.src_len == 30 || shape.src_len == 61));
    CHECK((shape.tgt_len == 12 || shape.tgt_len == 30 || shape.tgt_len == 61));
  }
  ExampleStore empty;
  Batcher none(empty, {}, {});
  CHECK(none.batches_per_epoch() == 0);
  CHECK_THROWS_AS(BatchStream(none, {}), Error);
}

// The training anchor (bench/train-anchor) compares whole runs with PyTorch on "the same
// batches in the same order": bench/torch_train_recipe.py writes the batcher again in Python,
// SplitMix64 shuffle included. Its plan must be this one, example for example.
TEST_CASE("the PyTorch training anchor plans the batches vkf's batcher plans",
          "[model][data][batcher]") {
  const char* python_env = std::getenv("VKF_PYTHON");
  const std::string python = python_env && *python_env ? python_env : "python3";
  if (std::system((python + " -c '' >/dev/null 2>&1").c_str()) != 0) {
    WARN("no python3: skipped");
    return;
  }
  auto store = random_store(1500, 120, 11);
  const auto dir = test::temp_dir("batcher-anchor");
  {
    std::ofstream src(dir / "src.ids"), tgt(dir / "tgt.ids");
    auto line = [](std::ofstream& out, std::span<const int32_t> ids) {
      for (size_t k = 0; k < ids.size(); ++k) out << (k ? " " : "") << ids[k];
      out << '\n';
    };
    for (size_t i = 0; i < store.size(); ++i) {
      line(src, store.source(i));
      line(tgt, store.target(i));
    }
  }
  const BatcherOptions options{.max_tokens = 1024, .max_len = 128, .seed = 5};
  const std::string cmd = python + " " VKF_SOURCE_DIR "/bench/torch_train_recipe.py --plan 2 " +
                          "--max-tokens 1024 --max-len 128 --seed 5 --source " +
                          (dir / "src.ids").string() + " --target " + (dir / "tgt.ids").string() +
                          " >" + (dir / "plan.txt").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream plan_file(dir / "plan.txt");
  Batcher batcher(store, {}, options);
  size_t lines = 0;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    auto plan = batcher.plan(epoch);
    for (size_t b = 0; b < plan.size(); ++b) {
      std::string text;
      REQUIRE(std::getline(plan_file, text));
      ++lines;
      std::istringstream in(text);
      uint64_t their_epoch = 0;
      int src_len = 0, tgt_len = 0;
      in >> their_epoch >> src_len >> tgt_len;
      std::vector<uint32_t> theirs{std::istream_iterator<uint32_t>(in), {}};
      auto ours = plan.examples(b);
      INFO("epoch " << epoch << " batch " << b);
      CHECK(their_epoch == epoch);
      CHECK(src_len == plan.shape(b).src_len);
      CHECK(tgt_len == plan.shape(b).tgt_len);
      CHECK(theirs == std::vector<uint32_t>(ours.begin(), ours.end()));
    }
  }
  std::string extra;
  CHECK_FALSE(std::getline(plan_file, extra));
  CHECK(lines > 20);  // several buckets and partial batches, not a trivial plan
}
