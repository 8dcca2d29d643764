// vkf::BatchSession (model/api/translator.h over model/decode/batching_session.h): requests that
// arrive while others decode join the running batch as its lines finish, and get what
// Translator::translate gives for the same lines, greedy and beam; a cancelled request frees its
// slots at once; the C API's session does the same.
#include <map>

#include "model/api/translator.h"
#include "tests/support/tiny_model.h"
#include "tests/support/vk_test.h"
#include "vkformer/vkformer.h"

using namespace vkf;

namespace {

std::vector<std::string> best(const std::vector<Translation>& t) {
  std::vector<std::string> out;
  for (const auto& x : t) out.push_back(x.nbest.empty() ? "<none>" : x.nbest[0].text);
  return out;
}

// Runs the session until idle, collecting what finishes.
void run_to_idle(BatchSession& s, std::map<BatchSession::Id, std::vector<std::string>>& got) {
  for (int guard = 0; s.step(); ++guard) {
    REQUIRE(guard < 10000);
    for (auto& f : s.take_finished()) got[f.id] = best(f.translations);
  }
  for (auto& f : s.take_finished()) got[f.id] = best(f.translations);
}

}  // namespace

VKF_TEST_CASE("a batch session translates requests that arrive mid-decoding as translate() does",
              "[api][session]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  for (uint32_t beam : {1u, 3u}) {
    // Batches of at most 4 lines: the 9 lines below take several, formed as requests arrive.
    Translator tr(dev, tm.dir.string(), {.beam = beam, .max_len_b = 10, .batch_size = 4});
    std::vector<std::string> all;
    for (int i = 0; i < 3; ++i)
      for (const auto& s : tm.sentences) all.push_back(s);
    const auto want = best(tr.translate(all));

    BatchSession s = tr.open_session();
    CHECK_THROWS_WITH(tr.start(all), Catch::Contains("already running"));
    std::map<BatchSession::Id, std::vector<std::string>> got;
    const auto a = s.submit({all.begin(), all.begin() + 5});
    CHECK(s.waiting_lines() == 5 - 1);  // the empty line finishes at once, without the device
    REQUIRE(s.step());                  // the first batch's encoder pass
    CHECK(s.running_lines() == 4);
    s.step();
    const auto b = s.submit({all.begin() + 5, all.begin() + 7});  // joins as slots free up
    const auto c = s.submit({});                                  // nothing to translate
    const auto d = s.submit({all.begin() + 7, all.end()});
    CHECK(s.waiting_lines() > 0);
    run_to_idle(s, got);
    CHECK(s.idle());
    CHECK_FALSE(s.step());
    // The 9 lines in slots of 4: at least 5 joined the first batch mid-decoding, unless a line
    // too long for its shape held them for a second one.
    const auto sizes = s.take_batch_sizes();
    CHECK(sizes.size() >= 1);
    CHECK(s.counts().joined_lines + 4 * sizes.size() >= 9 - 1);
    CHECK(s.counts().joined_lines > 0);
    CHECK(s.output_tokens() > 0);
    REQUIRE(got.count(a) == 1);
    REQUIRE(got.count(b) == 1);
    REQUIRE(got.count(d) == 1);
    CHECK(got[c].empty());
    std::vector<std::string> joined;
    for (auto id : {a, b, d}) joined.insert(joined.end(), got[id].begin(), got[id].end());
    CHECK(joined == want);
  }
}

VKF_TEST_CASE("a request that arrives mid-decoding joins the running batch at the next step",
              "[api][session]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  std::vector<std::string> lines;
  for (const auto& x : tm.sentences)
    if (!x.empty()) lines.push_back(x);
  REQUIRE(lines.size() >= 2);
  for (uint32_t beam : {1u, 2u}) {
    // 4 slots, as on a GPU (a CPU device's default is 1): room for the second line.
    Translator tr(dev, tm.dir.string(),
                  {.beam = beam, .max_len_b = 10, .batch_size = 8, .session_min_slots = 4});
    const auto want_first = best(tr.translate({lines[0]}));
    const auto want_second = best(tr.translate({lines[1]}));
    BatchSession s = tr.open_session();
    const auto first = s.submit({lines[0]});
    REQUIRE(s.step());  // a batch of 4 slots opens for the lone line
    REQUIRE(s.step());  // its first decoder step
    CHECK(s.running_lines() == 1);
    const auto second = s.submit({lines[1]});
    CHECK(s.waiting_lines() == 1);
    REQUIRE(s.step());  // the newcomer's encoder pass, in the running batch
    CHECK(s.waiting_lines() == 0);
    CHECK(s.running_lines() + s.take_finished().size() == 2);
    CHECK(s.counts().joined_lines == 1);
    std::map<BatchSession::Id, std::vector<std::string>> got;
    run_to_idle(s, got);
    CHECK(s.take_batch_sizes() == std::vector<uint32_t>{1});  // one batch, opened with 1 line
    CHECK(got[first] == want_first);
    CHECK(got[second] == want_second);

    // A request's own output limit (3 tokens, EOS included) gives what a translator whose
    // limit is 3 gives; the others keep the translator's.
    Translator three(dev, tm.dir.string(),
                     {.beam = beam, .max_len_a = 0, .max_len_b = 3, .batch_size = 8});
    const auto want_short = best(three.translate({lines[0], lines[1]}));
    const auto limited = s.submit({lines[0], lines[1]}, 3);
    const auto free = s.submit({lines[1]});
    got.clear();
    run_to_idle(s, got);
    CHECK(got[limited] == want_short);
    CHECK(got[free] == want_second);
  }
}

VKF_TEST_CASE("a cancelled request leaves the batch session, the others are answered",
              "[api][session]") {
  Device& dev = test::device();
  const auto& tm = test::tiny_model();
  Translator tr(dev, tm.dir.string(), {.beam = 2, .max_len_b = 10, .batch_size = 2});
  std::vector<std::string> lines;
  for (const auto& x : tm.sentences)
    if (!x.empty()) lines.push_back(x);
  REQUIRE(lines.size() >= 2);
  const auto want = best(tr.translate({lines[0]}));

  BatchSession s = tr.open_session();
  const auto doomed = s.submit({lines[0], lines[1], lines[0], lines[1]});
  REQUIRE(s.step());  // its first batch (2 lines) starts; 2 more wait
  CHECK(s.waiting_lines() == 2);
  const auto kept = s.submit({lines[0]});
  CHECK(s.cancel(doomed));
  CHECK_FALSE(s.cancel(doomed));
  CHECK(s.waiting_lines() == 1);  // its waiting lines left at once
  CHECK(s.running_lines() == 0);  // and its running ones their slots
  // The kept request takes a freed slot of the running batch at the next step.
  REQUIRE(s.step());
  CHECK(s.running_lines() + s.waiting_lines() == 1);
  std::map<BatchSession::Id, std::vector<std::string>> got;
  run_to_idle(s, got);
  CHECK(got.count(doomed) == 0);
  REQUIRE(got.count(kept) == 1);
  CHECK(got[kept] == want);
  CHECK_FALSE(s.cancel(kept));  // finished
  CHECK_FALSE(s.cancel(12345));
}

VKF_TEST_CASE("the C API's batch session answers as vkf_translate", "[api][session][c]") {
  const auto& tm = test::tiny_model();
  vkf_device_options o;
  vkf_device_options_init(&o);
  o.validation = test::instance()->validation_enabled() ? 1 : 0;
  vkf_device dev = nullptr;
  REQUIRE(vkf_device_create(&o, &dev) == VKF_OK);
  vkf_translator_options to;
  vkf_translator_options_init(&to);
  to.max_len_b = 10;
  to.batch_size = 2;
  vkf_translator tr = nullptr;
  REQUIRE(vkf_translator_load(dev, tm.dir.string().c_str(), &to, &tr) == VKF_OK);
  std::vector<const char*> in;
  for (const auto& l : tm.sentences) in.push_back(l.c_str());
  char** want = nullptr;
  REQUIRE(vkf_translate(tr, in.data(), in.size(), &want) == VKF_OK);

  vkf_session s = nullptr;
  REQUIRE(vkf_session_open(tr, &s) == VKF_OK);
  uint64_t first = 0, second = 0;
  REQUIRE(vkf_session_submit(s, in.data(), 2, &first) == VKF_OK);
  int busy = 1;
  REQUIRE(vkf_session_step(s, &busy) == VKF_OK);
  REQUIRE(vkf_session_submit(s, in.data() + 2, in.size() - 2, &second) == VKF_OK);
  uint64_t refused = 7;
  CHECK(vkf_session_submit(s, nullptr, 1, &refused) == VKF_ERROR_INVALID_ARGUMENT);
  CHECK(refused == 0);
  CHECK(vkf_session_cancel(s, 999) == VKF_ERROR_INVALID_ARGUMENT);
  std::map<uint64_t, std::vector<std::string>> got;
  for (int guard = 0; busy; ++guard) {
    REQUIRE(guard < 10000);
    REQUIRE(vkf_session_step(s, &busy) == VKF_OK);
    uint64_t id = 0;
    char** out = nullptr;
    size_t count = 0;
    while (vkf_session_take(s, &id, &out, &count) == VKF_OK && id != 0) {
      got[id].assign(out, out + count);
      vkf_translations_free(out, count);
    }
  }
  REQUIRE(got.count(first) == 1);
  REQUIRE(got.count(second) == 1);
  std::vector<std::string> joined = got[first];
  joined.insert(joined.end(), got[second].begin(), got[second].end());
  CHECK(joined == std::vector<std::string>(want, want + in.size()));

  // A request's own output limit equals a translator whose limit is that length.
  uint64_t limited = 0;
  REQUIRE(vkf_session_submit_limited(s, in.data(), in.size(), 3, &limited) == VKF_OK);
  std::vector<std::string> got_limited;
  for (busy = 1; busy;) {
    REQUIRE(vkf_session_step(s, &busy) == VKF_OK);
    uint64_t id = 0;
    char** out = nullptr;
    size_t count = 0;
    while (vkf_session_take(s, &id, &out, &count) == VKF_OK && id != 0) {
      CHECK(id == limited);
      got_limited.assign(out, out + count);
      vkf_translations_free(out, count);
    }
  }
  to.max_len_a = 0;
  to.max_len_b = 3;
  vkf_translator short_tr = nullptr;
  REQUIRE(vkf_translator_load(dev, tm.dir.string().c_str(), &to, &short_tr) == VKF_OK);
  char** want_short = nullptr;
  REQUIRE(vkf_translate(short_tr, in.data(), in.size(), &want_short) == VKF_OK);
  CHECK(got_limited == std::vector<std::string>(want_short, want_short + in.size()));
  CHECK(got_limited != joined);  // the limit cut something: the check above could fail
  vkf_translations_free(want_short, in.size());
  vkf_translator_free(short_tr);

  vkf_translations_free(want, in.size());
  vkf_session_free(s);
  vkf_translator_free(tr);
  vkf_device_free(dev);
}
