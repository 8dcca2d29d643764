// The training loop end to end on a small slice of the bundled corpus: resume equality, clean
// interruption, refusals, non-finite loss handling, and scoring against the CPU reference.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/average.h"
#include "model/checkpoint.h"
#include "model/data/tokenizer.h"
#include "model/loaded_model.h"
#include "model/scorer.h"
#include "model/train/train_state.h"
#include "model/train/trainer.h"
#include "reference/transformer.h"
#include "tests/support/small_run.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vk_test.h"

using namespace vkf;
using namespace vkf::model;
namespace fs = std::filesystem;

namespace {

using test::small_run;
using test::temp_dir;

using test::read_bytes;

}  // namespace

VKF_TEST_CASE("a resumed run ends bit-identical to an uninterrupted one", "[model][trainer]") {
  Device& dev = test::device();
  const fs::path a = temp_dir("straight"), b = temp_dir("resumed");
  TrainerOptions straight = small_run(a);
  straight.accumulate = 2;  // micro-batches get their own dropout seeds
  straight.max_steps = 6;
  straight.valid = straight.train;  // validation must not disturb the run
  straight.valid_every = 2;
  train(dev, straight);

  TrainerOptions first = straight;
  first.out_dir = b.string();
  first.max_steps = 3;
  TrainSummary s1 = train(dev, first);
  CHECK(s1.steps == 3);
  TrainerOptions second = first;
  second.max_steps = 6;
  second.resume = true;
  TrainSummary s2 = train(dev, second);
  CHECK(s2.steps == 6);

  REQUIRE(fs::exists(a / checkpoint_name(6)));
  REQUIRE(fs::exists(b / checkpoint_name(6)));
  CHECK(read_bytes(a / checkpoint_name(6)) == read_bytes(b / checkpoint_name(6)));
  // The optimizer state too (all but the wall-clock time it records).
  const uint64_t n =
      ParamLayout(load_checkpoint((a / checkpoint_name(6)).string()).config).total_floats();
  TrainState sa = load_train_state((a / train_state_name(6)).string(), n);
  TrainState sb = load_train_state((b / train_state_name(6)).string(), n);
  CHECK(sa.adam_m == sb.adam_m);
  CHECK(sa.adam_v == sb.adam_v);
  CHECK(sa.step == sb.step);
  CHECK(sa.position == sb.position);
  CHECK(sa.tokens_seen == sb.tokens_seen);
  CHECK(sa.seed == sb.seed);
  // And the run actually changed the parameters.
  Checkpoint at3 = load_checkpoint((b / checkpoint_name(3)).string());
  Checkpoint at6 = load_checkpoint((b / checkpoint_name(6)).string());
  CHECK(at3.params != at6.params);
  CHECK(fs::exists(b / "vocab.model"));
  CHECK(fs::exists(b / "train.jsonl"));
}

VKF_TEST_CASE("the dev loss falls and old checkpoints are pruned", "[model][trainer]") {
  Device& dev = test::device();
  const fs::path dir = temp_dir("falls");
  TrainerOptions o = small_run(dir);
  o.config.dropout = 0.0f;
  o.valid = o.train;
  o.max_steps = 40;
  o.adam.lr = 4.0f;
  o.save_every = 10;
  o.keep_checkpoints = 2;
  TrainSummary s = train(dev, o);
  REQUIRE(s.first_valid);
  REQUIRE(s.last_valid);
  INFO("valid loss " << s.first_valid->loss_per_token << " -> " << s.last_valid->loss_per_token);
  CHECK(s.last_valid->loss_per_token < s.first_valid->loss_per_token - 0.5);
  CHECK(last_checkpoints(dir.string(), 2) ==
        std::vector<std::string>{(dir / checkpoint_name(30)).string(),
                                 (dir / checkpoint_name(40)).string()});
  CHECK_FALSE(fs::exists(dir / checkpoint_name(20)));
  CHECK_FALSE(fs::exists(dir / train_state_name(20)));
}

VKF_TEST_CASE("a stop request ends the run with a loadable checkpoint", "[model][trainer]") {
  Device& dev = test::device();
  const fs::path dir = temp_dir("stop");
  std::atomic<bool> stop{true};
  TrainerOptions o = small_run(dir);
  o.max_steps = 1000;
  o.stop_requested = &stop;
  // Requested before the first step: nothing was trained, so nothing is written.
  TrainSummary s = train(dev, o);
  CHECK(s.interrupted);
  CHECK(s.steps == 0);
  CHECK(s.last_checkpoint.empty());
  CHECK(list_checkpoints(dir.string()).empty());
  // After a step: that step is saved ...
  stop = false;
  s = train(dev, o, {.stop_after_micro_batches = 1});
  CHECK(s.interrupted);
  CHECK(s.steps == 1);
  Checkpoint ck = load_checkpoint(resolve_checkpoint(dir.string()));
  CHECK(ck.step == 1);
  // ... and the run resumes.
  o.resume = true;
  o.max_steps = 2;
  CHECK(train(dev, o).steps == 2);
}

VKF_TEST_CASE("a stop between micro-batches drops the partial step and the resumed run is exact",
              "[model][trainer]") {
  Device& dev = test::device();
  const fs::path a = temp_dir("micro-straight"), b = temp_dir("micro-stopped");
  TrainerOptions straight = small_run(a);
  straight.accumulate = 3;
  straight.max_steps = 3;
  train(dev, straight);

  // Stopped after step 1 and one micro-batch of step 2.
  TrainerOptions stopped = straight;
  stopped.out_dir = b.string();
  stopped.max_steps = 1000;
  TrainSummary s = train(dev, stopped, {.stop_after_micro_batches = 4});
  CHECK(s.interrupted);
  CHECK(s.steps == 1);
  CHECK(list_checkpoints(b.string()).size() == 1);
  CHECK(fs::exists(b / checkpoint_name(1)));
  // The data position of the checkpoint is the end of step 1, not the dropped micro-batch.
  const uint64_t n =
      ParamLayout(load_checkpoint((b / checkpoint_name(1)).string()).config).total_floats();
  CHECK(load_train_state((b / train_state_name(1)).string(), n).position.batch == 3);

  TrainerOptions resumed = straight;
  resumed.out_dir = b.string();
  resumed.resume = true;
  CHECK(train(dev, resumed).steps == 3);
  CHECK(read_bytes(a / checkpoint_name(3)) == read_bytes(b / checkpoint_name(3)));
}

VKF_TEST_CASE("the trainer refuses what it cannot continue", "[model][trainer]") {
  Device& dev = test::device();
  const fs::path dir = temp_dir("refuse");
  TrainerOptions o = small_run(dir);
  o.max_steps = 1;
  train(dev, o);
  // A second run into the same directory would mix two runs.
  REQUIRE_THROWS_WITH(train(dev, o), Catch::Contains("already holds checkpoints"));
  // Another architecture.
  TrainerOptions other = o;
  other.resume = true;
  other.max_steps = 2;
  other.config.d_ff = 48;
  REQUIRE_THROWS_WITH(train(dev, other), Catch::Contains("d_ff"));
  // A missing or corrupt optimizer state.
  fs::resize_file(dir / train_state_name(1), 100);
  o.resume = true;
  o.max_steps = 2;
  REQUIRE_THROWS_WITH(train(dev, o), Catch::Contains("truncated"));
  fs::remove(dir / train_state_name(1));
  REQUIRE_THROWS_WITH(train(dev, o), Catch::Contains("cannot be resumed"));
  // Nothing to resume.
  TrainerOptions fresh = small_run(temp_dir("refuse-empty"));
  fresh.resume = true;
  fresh.max_steps = 1;
  REQUIRE_THROWS_WITH(train(dev, fresh), Catch::Contains("no checkpoint"));
}

VKF_TEST_CASE("a diverging run stops with a clear error and keeps the last good checkpoint",
              "[model][trainer]") {
  Device& dev = test::device();
  const fs::path dir = temp_dir("diverge");
  TrainerOptions o = small_run(dir);
  o.adam.schedule = ops::LrSchedule::constant;
  o.adam.lr = 1e30f;
  o.max_steps = 20;
  o.save_every = 1;
  REQUIRE_THROWS_WITH(train(dev, o), Catch::Contains("non-finite") || Catch::Contains("NaN") ||
                                         Catch::Contains("infinite"));
  // The checkpoint it names loads.
  const std::string last = resolve_checkpoint(dir.string());
  CHECK_NOTHROW(load_checkpoint(last));
}

VKF_TEST_CASE("scoring matches the CPU reference, in input order, bad lines flagged",
              "[model][trainer][score]") {
  Device& dev = test::device();
  const fs::path dir = temp_dir("score");
  TrainerOptions o = small_run(dir);
  o.max_steps = 3;
  train(dev, o);
  LoadedModel m = load_model(dir.string());

  // Pairs of different lengths (so they land in different buckets), an empty target, and a
  // line of invalid UTF-8 in the middle.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"Open the file.", "Die Datei öffnen."},
      {"This is a somewhat longer sentence with more words in it to score.",
       "Dies ist ein etwas längerer Satz mit mehr Wörtern."},
      {"bad \xff byte", "schlecht"},
      {"Empty target.", ""},
  };
  const fs::path src = dir / "s.txt", tgt = dir / "t.txt";
  {
    std::ofstream s(src), t(tgt);
    for (auto& [a, b] : pairs) s << a << '\n', t << b << '\n';
  }
  auto scores = score_corpus(dev, m, CorpusFiles::two_files(src.string(), tgt.string()));
  REQUIRE(scores.size() == pairs.size());
  CHECK(scores[2].error == "invalid UTF-8");
  CHECK(std::isnan(scores[2].logprob));

  const ModelConfig& c = m.checkpoint.config;
  const ParamLayout layout(c);
  const std::vector<double> params(m.checkpoint.params.begin(), m.checkpoint.params.end());
  for (size_t i : {size_t(0), size_t(1), size_t(3)}) {
    auto s = m.tokenizer.encode(pairs[i].first), t = m.tokenizer.encode(pairs[i].second);
    ref::TransformerBatch b;
    b.batch = 1;
    b.src_len = int(s.size()) + 1;
    b.tgt_len = int(t.size()) + 1;
    b.src = s;
    b.src.push_back(c.eos_id);
    b.tgt_in = {c.bos_id};
    b.tgt_in.insert(b.tgt_in.end(), t.begin(), t.end());
    b.tgt_out = t;
    b.tgt_out.push_back(c.eos_id);
    auto want = ref::transformer_forward(c, layout, params, b);
    INFO("pair " << i);
    CHECK(scores[i].error.empty());
    CHECK(scores[i].tokens == int64_t(t.size()) + 1);
    CHECK(scores[i].logprob == Approx(want.row_logprob[0]).epsilon(1e-4));
  }
}
