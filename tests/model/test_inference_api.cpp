// The inference API a host embeds (model/api/): vkf::Translator against the decoder it wraps,
// its host-driven steps (step, poll, time budget) against one blocking call, weights only on the
// device (no gradients or Adam moments), the memory cap refusing a model cleanly,
// vkf::Scorer against `vkf score`'s scorer, and the tuning a translator applies.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "model/api/scorer.h"
#include "model/api/translator.h"
#include "model/decode/text.h"
#include "model/decode/translator.h"
#include "model/device_params.h"
#include "model/loaded_model.h"
#include "tests/support/small_corpus.h"
#include "tests/support/tiny_model.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

std::vector<std::string> best(const std::vector<Translation>& t) {
  std::vector<std::string> out;
  for (const auto& x : t) out.push_back(x.nbest.empty() ? "<none>" : x.nbest[0].text);
  return out;
}

}  // namespace

VKF_TEST_CASE("vkf::Translator gives what the decoder it wraps gives", "[api][translator]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  for (uint32_t beam : {1u, 3u}) {
    // fp32, as the decoder built below (automatic would take fp16 on a GPU).
    TranslatorOptions o{.beam = beam,
                        .max_len_b = 12,
                        .nbest = beam == 1 ? 1u : 2u,
                        .precision = model::PrecisionChoice::fp32};
    Translator tr(dev, tm.dir.string(), o);
    CHECK(tr.checkpoint() == tm.checkpoint.string());
    const auto got = tr.translate(tm.sentences);

    model::LoadedModel m = model::load_model(tm.dir.string());
    model::DeviceWeights w(dev, m.checkpoint.config);
    w.upload(m.checkpoint.params);
    model::decode::TranslateOptions d;
    d.beam = beam;
    d.max_len_b = 12;
    d.nbest = o.nbest;
    model::decode::Translator ref(dev, w, d);
    const auto want = model::decode::translate_lines(ref, m.tokenizer, tm.sentences);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i].nbest.size() == want[i].nbest.size());
      for (size_t k = 0; k < got[i].nbest.size(); ++k) {
        CHECK(got[i].nbest[k].text == want[i].nbest[k].text);
        CHECK(got[i].nbest[k].score == want[i].nbest[k].score);
      }
    }
    CHECK(got[2].nbest.empty());  // the empty line
    CHECK(got[0].nbest.size() == o.nbest);
  }
}

VKF_TEST_CASE("a translation driven step by step, by polling or by time budget, is the same",
              "[api][translator][async]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  // Batches of two: several encoder passes and searches in one job.
  Translator tr(dev, tm.dir.string(), {.beam = 2, .max_len_b = 10, .batch_size = 2, .timed = true});
  const auto whole = best(tr.translate(tm.sentences));

  {
    TranslationSteps steps = tr.start(tm.sentences);
    CHECK_THROWS_WITH(tr.start(tm.sentences), Catch::Contains("already running"));
    uint32_t units = 0;
    while (steps.step()) {
      const StepReport r = steps.take_report();
      CHECK(r.units == 1);
      CHECK(r.host_ms > 0);
      units += r.units;
    }
    units += steps.take_report().units;
    CHECK(units > 3);  // 2 batches' encoder passes and more than one decoder step
    CHECK(steps.sentences() == tm.sentences.size());
    // A finished job, still alive, leaves the translator free.
    CHECK(best(tr.translate(tm.sentences)) == whole);
    CHECK(best(steps.results()) == whole);
  }
  {
    // poll() never waits: the units it collects were finished when it looked.
    TranslationSteps steps = tr.start(tm.sentences);
    uint64_t polls = 0;
    const auto start = std::chrono::steady_clock::now();
    while (!steps.poll()) {
      ++polls;
      REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(120));
    }
    const StepReport r = steps.take_report();
    CHECK(r.units > 3);
    CHECK(polls >= r.units - 1);  // at most one unit collected per poll
    if (dev.info().timestamp_valid_bits) CHECK(r.gpu_ms > 0);
    CHECK(r.sentences == tm.sentences.size());
    CHECK(best(steps.results()) == whole);
  }
  {
    TranslationSteps steps = tr.start(tm.sentences);
    int calls = 0;
    while (!steps.run_for(std::chrono::microseconds(1))) ++calls;  // one unit a call at least
    CHECK(calls > 0);
    CHECK(best(steps.results()) == whole);
  }
  {
    TranslationSteps steps = tr.start(tm.sentences);
    CHECK(steps.run_for(std::chrono::minutes(10)));  // all in one call
    CHECK(best(steps.results()) == whole);
  }
  // A job given up half way leaves the translator usable.
  {
    TranslationSteps steps = tr.start(tm.sentences);
    steps.step();
    steps.step();
    CHECK_THROWS_WITH(steps.results(), Catch::Contains("before the translation job is done"));
  }
  CHECK(best(tr.translate(tm.sentences)) == whole);
}

VKF_TEST_CASE("inference holds the weights only: a quarter of what training holds",
              "[api][translator][memory]") {
  const auto& tm = test::tiny_model();
  const model::ParamLayout layout(tm.config);
  uint64_t weights_used = 0, training_used = 0;
  {
    auto dev = test::new_device();
    const uint64_t before = dev->memory().stats(MemoryKind::device).used_bytes;
    // fp32 weights, as training's (automatic would take fp16 on a GPU).
    Translator tr(*dev, tm.dir.string(),
                  {.beam = 2, .max_len_b = 10, .precision = model::PrecisionChoice::fp32});
    weights_used = dev->memory().stats(MemoryKind::device).used_bytes - before;
    const uint64_t align = dev->memory().alignment();
    CHECK(weights_used == (tr.weight_bytes() + align - 1) / align * align);
    CHECK(tr.weight_bytes() >= layout.total_floats() * 4);
    CHECK(tr.cache_bytes() == 0);  // nothing recorded yet
    tr.translate(tm.sentences);
    const uint64_t after = dev->memory().stats(MemoryKind::device).used_bytes - before;
    CHECK(tr.cache_bytes() > 0);
    // Weights plus the decoder's buffers (each rounded up to the allocator's alignment): far
    // from the three more weight-sized buffers training holds.
    CHECK(after <= weights_used + tr.cache_bytes() + 64 * align);
    CHECK(after < 2 * weights_used + tr.cache_bytes());
  }
  {
    auto dev = test::new_device();
    const uint64_t before = dev->memory().stats(MemoryKind::device).used_bytes;
    model::DeviceParams training(*dev, tm.config);
    training_used = dev->memory().stats(MemoryKind::device).used_bytes - before;
  }
  CHECK(training_used == 4 * weights_used);  // weights, gradients and two Adam moments
}

VKF_TEST_CASE("a memory cap too small for the model refuses it cleanly",
              "[api][translator][memory]") {
  const auto& tm = test::tiny_model();
  const uint64_t weights = model::ParamLayout(tm.config).total_floats() * 4;
  const uint64_t staging = 64 << 10;
  auto dev = test::new_device(
      {.memory = {.limit_bytes = staging + weights / 2}, .staging_bytes = staging});
  CHECK_THROWS_AS(Translator(*dev, tm.dir.string()), OutOfMemoryError);
  CHECK_THROWS_WITH(Translator(*dev, tm.dir.string()),
                    Catch::Contains("memory cap") && Catch::Contains("parameters"));
  // The device still works, and a cap that fits the model serves it.
  auto roomy = test::new_device({.memory = {.limit_bytes = 64ull << 20}});
  Translator tr(*roomy, tm.dir.string(), {.beam = 1, .max_len_b = 5});
  CHECK(tr.translate({"the house."}).size() == 1);
  CHECK(roomy->memory().reserved_bytes() <= 64ull << 20);
}

VKF_TEST_CASE("vkf::Scorer scores pairs as `vkf score` does", "[api][scorer]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  const std::vector<std::string> src = {"the house is small.", "bad \xff line", "a river."};
  const std::vector<std::string> tgt = {"das Haus ist klein.", "x", "ein Fluss."};
  Scorer scorer(dev, tm.dir.string());
  const auto got = scorer.score(src, tgt);
  REQUIRE(got.size() == 3);
  CHECK(got[1].error == "invalid UTF-8");
  CHECK(std::isnan(got[1].logprob));

  const std::filesystem::path dir = test::temp_dir("api-scorer");
  {
    std::ofstream s(dir / "src"), t(dir / "tgt");
    for (size_t i = 0; i < src.size(); ++i) {
      s << src[i] << "\n";
      t << tgt[i] << "\n";
    }
  }
  const auto want = model::score_corpus(
      dev, model::load_model(tm.dir.string()),
      model::CorpusFiles::two_files((dir / "src").string(), (dir / "tgt").string()));
  REQUIRE(want.size() == 3);
  for (size_t i : {0u, 2u}) {
    CHECK(got[i].error.empty());
    CHECK(got[i].tokens == want[i].tokens);
    CHECK(got[i].logprob == want[i].logprob);
    CHECK(got[i].logprob < 0);
  }
  CHECK_THROWS_WITH(scorer.score(src, {"one"}), Catch::Contains("3 sources but 1 targets"));
  CHECK(scorer.weight_bytes() >= model::ParamLayout(tm.config).total_floats() * 4);
}

VKF_TEST_CASE("vkf::Translator tunes the device as `vkf translate --tune` does",
              "[api][translator][tune]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  const std::filesystem::path dir = test::temp_dir("api-tune");
  TranslatorOptions o{.beam = 1, .max_len_b = 12, .precision = model::PrecisionChoice::fp32};
  const auto untuned = best(Translator(dev, tm.dir.string(), o).translate(tm.sentences));
  CHECK(dev.tuning() == nullptr);  // the default leaves the device as it is

  // auto: no tuning file in the cache folder yet, so a short run over what this translator runs
  // makes one there, and the device runs it.
  o.tuning = {.use = "auto", .budget_seconds = 2, .cache_dir = (dir / "cache").string()};
  std::vector<std::string> tuned;
  {
    Translator tr(dev, tm.dir.string(), o);
    INFO(tr.tuning());
    CHECK(tr.tuning().rfind("tuned (" + (dir / "cache").string(), 0) == 0);
    CHECK(dev.tuning() != nullptr);
    tuned = best(tr.translate(tm.sentences));
  }
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "cache"))
    files += e.path().extension() == ".json";
  CHECK(files == 1);
  // Checked kernels: the same greedy translations as the static tables give.
  CHECK(tuned == untuned);

  // A host's own tuning stays when a translator is made with the default.
  const Tuning* host = dev.tuning();
  { Translator tr(dev, tm.dir.string(), TranslatorOptions{.max_len_b = 12}); }
  CHECK(dev.tuning() == host);
  // off: the static tables; a missing file, or a budget no tuner can keep, is refused by name.
  o.tuning = {.use = "off"};
  CHECK(Translator(dev, tm.dir.string(), o).tuning() == "default (--tune off)");
  CHECK(dev.tuning() == nullptr);
  o.tuning = {.use = (dir / "no-such.json").string()};
  CHECK_THROWS_WITH(Translator(dev, tm.dir.string(), o),
                    Catch::Contains((dir / "no-such.json").string()));
  o.tuning = {.use = "auto", .budget_seconds = 1e300};
  CHECK_THROWS_WITH(Translator(dev, tm.dir.string(), o), Catch::Contains("tuning budget"));
  dev.set_tuning(nullptr);  // the test device is shared with the other tests
}
