// The failure modes of issue 17, each as a user meets it: a refused run, two runs in one
// directory, signals, corrupt and lying checkpoints, untrusted sizes, full disks, leftovers, a
// foreign optimizer state, nonsense numbers, unclear messages and a runaway beam. Every test
// runs the real binary.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "model/checkpoint.h"
#include "model/train/train_state.h"
#include "tests/apps/cli_support.h"
#include "tests/support/small_corpus.h"

namespace fs = std::filesystem;
using namespace vkf::test;
using Catch::Contains;

namespace {

const std::string k_ck = "checkpoint-2.safetensors";

bool has_full() {
  return fs::exists("/dev/full");
}

// A checkpoint of the trained model with one float replaced.
void poison(const fs::path& from, const fs::path& to, float value) {
  edit_safetensors(
      from, to, [&](std::string&, std::string& data) { std::memcpy(data.data() + 64, &value, 4); });
}

// The header of a checkpoint as JSON, changed by `edit`, written to `to`.
void edit_header(const fs::path& from, const fs::path& to,
                 const std::function<void(nlohmann::json&)>& edit) {
  edit_safetensors(from, to, [&](std::string& header, std::string&) {
    nlohmann::json j = nlohmann::json::parse(header);
    edit(j);
    header = j.dump();
  });
}

void edit_config(const fs::path& from, const fs::path& to,
                 const std::function<void(nlohmann::json&)>& edit) {
  edit_header(from, to, [&](nlohmann::json& j) {
    nlohmann::json c = nlohmann::json::parse(j["__metadata__"]["config"].get<std::string>());
    edit(c);
    j["__metadata__"]["config"] = c.dump();
  });
}

std::string sha_of(const fs::path& p) {
  return slurp(p);  // the bytes themselves: equality is all the tests need
}

std::string translate_args(const fs::path& model) {
  return "translate --model " + model.string();
}

}  // namespace

TEST_CASE("1: a refused train leaves the run's vocabulary alone", "[apps][cli][robust]") {
  const fs::path run = copy_of(untrained_model(), "robust-vocab");
  const fs::path vocab = run / "vocab.model";
  const std::string before = sha_of(vocab);
  // Another vocabulary under the same file name.
  const fs::path other_dir = temp_dir("robust-vocab-other");
  const auto& c = small_corpus();
  REQUIRE(run_vkf("vocab --train-sets " + c.src.string() + " " + c.tgt.string() +
                  " --vocab-size 200 --out " + (other_dir / "vocab.model").string())
              .status == 0);
  const std::string other = "--vocab " + (other_dir / "vocab.model").string();
  auto args = [&](const std::string& extra) {
    // train_args names the run's vocabulary; the later --vocab is not allowed twice, so build
    // the line by hand.
    return "train --preset tiny --d-model 32 --d-ff 64 --heads 2 --layers 1 --max-tokens 256 "
           "--warmup-steps 10 --train-sets " +
           c.src.string() + " " + c.tgt.string() + " --out " + run.string() + " " + extra;
  };
  CliResult r = run_vkf(args(other + " --max-steps 3"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("pass --resume"));
  CHECK(sha_of(vocab) == before);
  r = run_vkf(args(other + " --max-steps 3 --resume"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("another vocabulary"));
  CHECK(sha_of(vocab) == before);
  // The run still translates with the vocabulary it names.
  r = run_vkf(translate_args(run), "a test\n");
  CHECK(r.status == 0);
}

TEST_CASE("2+3+7: one run per --out / two signals are one request / kill -9 leaves nothing stuck",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-lock");
  const fs::path run = dir / "run";
  const auto started = [&] {
    return slurp(run / "train.jsonl").find("\"step\":1,") != std::string::npos;
  };
  {
    Background first(train_args(run, "--max-steps 1000000 --log-every 1"), dir);
    REQUIRE(first.wait_for(started, 600));
    // A second run into the same directory, fresh or resuming, is refused and names the first.
    for (const char* extra : {"--max-steps 5", "--max-steps 5 --resume"}) {
      CliResult r = run_vkf(train_args(run, extra));
      CHECK(r.status == 1);
      CHECK_THAT(r.err, Contains("in use by another training"));
      CHECK_THAT(r.err, Contains("process " + std::to_string(first.pid())));
    }
    // GNU timeout and group kills deliver a signal twice within microseconds: one request, so
    // the run still writes its checkpoint, and exits 143 as a stopped run (issue 41 item 5).
    first.signal(SIGTERM);
    first.signal(SIGTERM);
    const int status = first.wait(300);
    INFO(first.err());
    CHECK(status == 143);
    CHECK_THAT(first.err(), Contains("interrupted: writing a checkpoint"));
  }
  const auto all = vkf::model::list_checkpoints(run.string());
  REQUIRE(all.size() == 1);
  const uint64_t step = all.back().first;

  // kill -9 while it trains: the lock goes with the process. A temporary file of that dead
  // process is removed at the next start; one of a live process (this test) is kept.
  pid_t dead = 0;
  {
    Background second(train_args(run, "--resume --max-steps 1000000 --log-every 1"), dir);
    REQUIRE(second.wait_for(
        [&] {
          return slurp(run / "train.jsonl").find("\"step\":" + std::to_string(step + 1) + ",") !=
                 std::string::npos;
        },
        600));
    second.signal(SIGKILL);
    CHECK(second.wait(60) == 128 + SIGKILL);
    dead = second.pid();
  }
  const fs::path stale = run / ("checkpoint-99.safetensors.tmp." + std::to_string(dead));
  const fs::path live = run / ("checkpoint-98.safetensors.tmp." + std::to_string(::getpid()));
  std::ofstream(stale) << "half a checkpoint";
  std::ofstream(live) << "being written";
  CliResult r = run_vkf(train_args(run, "--resume --max-steps " + std::to_string(step + 1)));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Contains("removed " + stale.string()));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(run / vkf::model::checkpoint_name(step + 1)));
}

TEST_CASE("3: a stop request is seen between micro-batches", "[apps][cli][robust]") {
  const fs::path run = copy_of_trained_model("robust-accumulate");
  const fs::path dir = temp_dir("robust-accumulate-log");
  // A step of 100000 micro-batches would take hours: only a stop between them ends it soon.
  Background b(train_args(run, "--resume --accumulate 100000 --max-steps 10"), dir);
  REQUIRE(b.wait_for([&] { return b.err().find("model: d_model") != std::string::npos; }, 600));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // well into step 3
  b.signal(SIGINT);
  const int status = b.wait(120);
  INFO(b.err());
  CHECK(status == 130);  // stopped, not finished (issue 41 item 5)
  CHECK_THAT(b.err(), Contains("interrupted during step 3"));
  CHECK_THAT(b.err(), Contains("already holds step 2"));
  // The partial step left nothing behind.
  CHECK(vkf::model::list_checkpoints(run.string()).size() == 1);
}

TEST_CASE("4: corrupt weights are refused by every command", "[apps][cli][robust]") {
  const fs::path run = copy_of_trained_model("robust-nan");
  const fs::path good = trained_model() / k_ck;
  const auto& c = small_corpus();
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e30f}) {
    INFO("value " << bad);
    poison(good, run / k_ck, bad);
    CliResult r = run_vkf(translate_args(run), "a test\n");
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("NaN, Inf or absurdly large"));
    CHECK(r.out.empty());
    r = run_vkf("score --model " + run.string() + " --src " + c.src.string() + " --tgt " +
                c.tgt.string());
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("NaN, Inf or absurdly large"));
    CHECK(r.out.find("nan") == std::string::npos);
  }
  // average refuses a NaN input and writes nothing.
  poison(good, run / k_ck, std::numeric_limits<float>::quiet_NaN());
  CliResult r = run_vkf("average --inputs " + good.string() + " " + (run / k_ck).string() +
                        " --out " + (run / "avg.safetensors").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("non-finite"));
  CHECK_FALSE(fs::exists(run / "avg.safetensors"));

  // --resume refuses NaN weights whose optimizer state matches them (a diverged run saved).
  auto ck = vkf::model::load_checkpoint((run / k_ck).string());
  const vkf::model::ParamLayout layout(ck.config);
  auto state = vkf::model::load_train_state((run / vkf::model::train_state_name(2)).string(),
                                            layout.total_floats());
  state.params_checksum = vkf::model::params_checksum(layout, ck.params);
  vkf::model::save_train_state((run / vkf::model::train_state_name(2)).string(), state);
  r = run_vkf(train_args(run, "--resume --max-steps 3"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("not a checkpoint to resume from"));
  CHECK_FALSE(fs::exists(run / vkf::model::checkpoint_name(3)));
}

TEST_CASE("4: lying safetensors headers are refused with the rule they break",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-headers");
  const fs::path good = untrained_model() / k_ck;
  fs::copy_file(untrained_model() / "vocab.model", dir / "vocab.model");
  struct Case {
    const char* name;
    std::function<void(const fs::path&)> make;
    const char* message;
  };
  const std::string bias = "encoder.layers.0.ffn.fc2.bias",
                    other = "encoder.layers.0.ffn_norm.bias";
  const std::vector<Case> cases = {
      {"overlapping offsets",
       [&](const fs::path& to) {
         edit_header(good, to, [&](nlohmann::json& j) {
           j[other]["data_offsets"] = j[bias]["data_offsets"];  // same size, same bytes
         });
       },
       "overlapping"},
      {"unaligned offsets",
       [&](const fs::path& to) {
         edit_header(good, to, [&](nlohmann::json& j) {
           auto o = j[bias]["data_offsets"];
           j[bias]["data_offsets"] = {o[0].get<uint64_t>() + 2, o[1].get<uint64_t>() + 2};
         });
       },
       "begins at byte"},
      {"fractional shape",
       [&](const fs::path& to) {
         edit_header(good, to, [&](nlohmann::json& j) { j[bias]["shape"] = {32.5}; });
       },
       "non-negative integers"},
      {"duplicate names",
       [&](const fs::path& to) {
         edit_safetensors(good, to, [&](std::string& header, std::string&) {
           const std::string key = "\"" + bias + "\":";
           const size_t at = header.find(key);
           const size_t end = header.find('}', at) + 1;
           header.insert(1, header.substr(at, end - at) + ",");
         });
       },
       "twice"},
      {"trailing bytes",
       [&](const fs::path& to) {
         edit_safetensors(good, to, [](std::string&, std::string& data) { data += "junk"; });
       },
       "trailing bytes"},
      {"layer count disagrees with the tensors",
       [&](const fs::path& to) {
         edit_config(good, to, [](nlohmann::json& c) { c["encoder_layers"] = 2; });
       },
       "lacks tensor encoder.layers.1"},
      {"tensors the config does not have",
       [&](const fs::path& to) {
         edit_safetensors(good, to, [](std::string& header, std::string& data) {
           // A second encoder layer's bias, appended where the data ends.
           nlohmann::json j = nlohmann::json::parse(header);
           j["encoder.layers.1.ffn.fc2.bias"] = {
               {"dtype", "F32"},
               {"shape", {32}},
               {"data_offsets", {data.size(), data.size() + 128}}};
           header = j.dump();
           data += std::string(128, '\0');
         });
       },
       "holds tensor encoder.layers.1.ffn.fc2.bias, which its config"},
      {"vocab_size past 2^32",
       [&](const fs::path& to) {
         edit_config(good, to, [](nlohmann::json& c) {
           c["vocab_size"] = (uint64_t(1) << 32) + c["vocab_size"].get<uint64_t>();
         });
       },
       "vocab_size must be a whole number in [-2147483648, 2147483647]"},
      {"fractional d_model",
       [&](const fs::path& to) {
         edit_config(good, to, [](nlohmann::json& c) { c["d_model"] = 32.5; });
       },
       "d_model must be a whole number"},
      {"negative step",
       [&](const fs::path& to) {
         edit_header(good, to, [](nlohmann::json& j) { j["__metadata__"]["step"] = "-1"; });
       },
       "metadata `step` is '-1'"},
      {"bad step",
       [&](const fs::path& to) {
         edit_header(good, to, [](nlohmann::json& j) { j["__metadata__"]["step"] = "12abc"; });
       },
       "metadata `step` is '12abc', not a non-negative whole number"},
  };
  for (const auto& k : cases) {
    INFO(k.name);
    const fs::path file = dir / "bad.safetensors";
    k.make(file);
    CliResult r = run_vkf(translate_args(file), "a test\n");
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains(k.message));
    CHECK_THAT(r.err, Contains(file.string()));
    r = run_vkf("average --inputs " + file.string() + " --out " + (dir / "x.safetensors").string());
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains(k.message));
  }
}

TEST_CASE("5: sizes from a file are checked before memory is reserved", "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-sizes");
  const fs::path good = untrained_model() / k_ck;
  // A small file whose config claims a 4096-wide model: about 1.6 GB if believed.
  const fs::path big = dir / "big.safetensors";
  edit_config(good, big, [](nlohmann::json& c) {
    c["d_model"] = 4096;
    c["d_ff"] = 16384;
    c["encoder_layers"] = c["decoder_layers"] = 1;
  });
  // Under a 300 MB address-space limit (without AddressSanitizer, whose shadow memory needs
  // terabytes of it), believing the header would end in std::bad_alloc.
  const std::string limit = address_sanitizer() ? "" : "ulimit -v 300000; ";
  CliResult r = run_shell(limit + k_vkf + " average --inputs " + big.string() + " --out " +
                          (dir / "x.safetensors").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("but its config implies"));
  CHECK(r.err.find("bad_alloc") == std::string::npos);
}

TEST_CASE("5: a line longer than --max-line-bytes is reported and skipped, never held",
          "[apps][cli][robust]") {
  const fs::path& model = untrained_model();
  const fs::path dir = temp_dir("robust-lines");
  // Between two short lines, 200 MB without a newline, as /dev/zero or a binary file gives.
  const std::string input =
      "{ echo 'a house'; head -c 200000000 /dev/zero; printf '\\nthe house\\n'; } | ";
  // translate: an empty output line for it, and the lines around it translated.
  CliResult r = run_shell(input + k_vkf + " translate --model " + model.string() +
                          " --max-line-bytes 100000");
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Contains("line 2 is longer than 100000 bytes"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 3);
  // vocab --encode, under an address-space limit below the line's size (not with
  // AddressSanitizer, whose shadow memory needs terabytes of address space).
  const std::string limit = address_sanitizer() ? "" : "ulimit -v 150000; ";
  r = run_shell(input + "(" + limit + "exec " + k_vkf + " vocab --model " +
                (model / "vocab.model").string() + " --encode --max-line-bytes 4096)");
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Contains("line 2 is longer than 4096 bytes"));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 3);
  // bleu must see every line: it refuses, naming the file and line.
  {
    std::ofstream f(dir / "long.txt", std::ios::binary);
    f << "first\n" << std::string(3 << 20, 'x') << "\nlast\n";
  }
  r = run_vkf("bleu " + (dir / "long.txt").string() + " " + (dir / "long.txt").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains((dir / "long.txt").string() + ":2: longer than 1048576 bytes"));
  // score reports the pair and exits 1.
  {
    std::ofstream s(dir / "s.en"), t(dir / "s.de");
    s << "a house\n" << std::string(3000, 'y') << "\n";
    t << "ein Haus\nkurz\n";
  }
  r = run_vkf("score --model " + model.string() + " --max-line-bytes 2000 --src " +
              (dir / "s.en").string() + " --tgt " + (dir / "s.de").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("line 2: longer than 2000 bytes"));
  CHECK(r.out.ends_with("nan\t0\n"));
}

TEST_CASE("6: a write error exits non-zero", "[apps][cli][robust]") {
  if (!has_full()) {
    WARN("no /dev/full: skipped");
    return;
  }
  const fs::path& model = untrained_model();
  const auto& c = small_corpus();
  CliResult r = run_vkf(
      "score --model " + model.string() + " --src " + c.src.string() + " --tgt " + c.tgt.string(),
      "", "/dev/full");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("No space left on device"));
  r = run_vkf("bleu " + c.src.string() + " " + c.src.string(), "", "/dev/full");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("writing to standard output failed"));
  r = run_vkf("vocab --model " + (model / "vocab.model").string() + " --encode", "a test\n",
              "/dev/full");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("writing to standard output failed"));
  r = run_vkf(translate_args(model), "a test\n", "/dev/full");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("No space left on device"));
}

TEST_CASE("6+7: a vocabulary that cannot be written leaves no file behind", "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-fsize");
  const auto& c = small_corpus();
  // A file-size limit of 8 KiB makes the write fail like a full disk (EFBIG); SIGXFSZ, which
  // would kill the process instead, is ignored as a shell can arrange.
  CliResult r =
      run_shell("trap '' XFSZ; ulimit -f 16; " + k_vkf + " vocab --train-sets " + c.src.string() +
                " " + c.tgt.string() + " --vocab-size 300 --out " + (dir / "v.model").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("File too large"));
  CHECK(fs::is_empty(dir));
}

TEST_CASE("8: an optimizer state is refused beside another run's checkpoint",
          "[apps][cli][robust]") {
  const fs::path run = copy_of_trained_model("robust-foreign");
  const fs::path other = temp_dir("robust-foreign-other");
  REQUIRE(run_vkf(train_args(other / "run", "--max-steps 2 --seed 7")).status == 0);
  const std::string state = vkf::model::train_state_name(2);
  fs::copy_file(other / "run" / state, run / state, fs::copy_options::overwrite_existing);
  CliResult r = run_vkf(train_args(run, "--resume --max-steps 3 --seed 7"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("does not belong to"));
  CHECK_FALSE(fs::exists(run / vkf::model::checkpoint_name(3)));

  // A state written before the checksum existed still resumes, with a note saying so.
  const fs::path old = copy_of_trained_model("robust-foreign-old");
  edit_header(trained_model() / state, old / state,
              [](nlohmann::json& j) { j["__metadata__"].erase("params_checksum"); });
  r = run_vkf(train_args(old, "--resume --max-steps 3"));
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Contains("predates optimizer-state checksums"));
}

TEST_CASE("9: numeric flags outside their range are refused, naming the range",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-flags");
  const std::string model = " --model " + dir.string();
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {train_args(dir, "--max-steps 1 --lr -1"), "--lr: must be a number in (0, 100]"},
      {train_args(dir, "--max-steps -1"), "--max-steps: must be a whole number >= 1"},
      {train_args(dir, "--max-steps 1 --clip-norm -1"), "--clip-norm: must be a number >= 0"},
      {train_args(dir, "--max-steps 1 --dropout 1.5"), "--dropout: must be a number in [0, 1)"},
      {train_args(dir, "--max-steps 1 --accumulate 0"), "--accumulate: must be a whole number"},
      {train_args(dir, "--max-steps 1 --warmup-steps 0"), "--warmup-steps"},
      {train_args(dir, "--max-steps 1 --lr nan"), "--lr: must be a number"},
      {train_args(dir, "--max-steps 1 --seed -3"), "--seed: must be a whole number >= 0"},
      {train_args(dir, "--max-steps 1 --keep-checkpoints 0"), "--keep-checkpoints"},
      {train_args(dir, "--max-steps 1 --d-model 1.5"), "--d-model: must be a whole number"},
      {"translate" + model + " --max-len-b -100", "--max-len-b: must be a whole number in [0,"},
      {"translate" + model + " --alpha -1", "--alpha: must be a number in [0, 10]"},
      {"translate" + model + " --batch-size 0", "--batch-size"},
      {"translate" + model + " --max-line-bytes 0", "--max-line-bytes"},
      {"score" + model + " --src a --max-tokens -5", "--max-tokens: must be a whole number >= 1"},
      {"average" + model + " --last 0 --out x", "--last: must be a whole number in [1,"},
      {"vocab --model m --encode --max-line-bytes -1", "--max-line-bytes"},
      {"vocab --train-sets " + small_corpus().src.string() + " " + small_corpus().tgt.string() +
           " --out c --threads 0",
       "--threads: must be a whole number in [1, 1024]"},
  };
  for (const auto& k : cases) {
    CliResult r = run_vkf(k.args);
    INFO(k.args);
    CHECK(r.status != 0);
    CHECK_THAT(r.err, Contains(k.message));
  }
}

TEST_CASE("10: messages name the file and what is wrong", "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-messages");
  const fs::path& model = untrained_model();
  CliResult r =
      run_vkf("average --inputs " + model.string() + " --out " + (dir / "x.safetensors").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains(model.string() + " is a directory (to average its last checkpoints: "
                                              "--model"));
  r = run_vkf(translate_args(model) + " --vocab " + dir.string(), "a test\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("tokenizer model " + dir.string() + " is a directory"));
  r = run_vkf("vocab --train-sets /dev/null /dev/null --out " + (dir / "v.model").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("input /dev/null is not a regular file"));
  // A training file that does not open is reported before the vocabulary is read or the kernels
  // are tuned (a first run on a device tunes for seconds to minutes).
  const auto& c = small_corpus();
  r = run_shell("VKF_CACHE_DIR=" + (dir / "cache").string() + " VKF_TUNE=auto " + k_vkf +
                " train --train-sets " + c.src.string() + " " + (dir / "missing.de").string() +
                " --vocab " + c.vocab.string() + " --max-steps 1 --out " + (dir / "run").string());
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("cannot open " + (dir / "missing.de").string() +
                             ": No such file or directory"));
  CHECK(r.err.find("tuning its kernels") == std::string::npos);
  // A checkpoint name whose step does not fit 64 bits is not taken for a checkpoint.
  std::ofstream(dir / "checkpoint-99999999999999999999999.safetensors") << "x";
  r = run_vkf(translate_args(dir), "a test\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("no checkpoint-<step>.safetensors in " + dir.string()));
}

TEST_CASE("11: the beam is capped", "[apps][cli][robust]") {
  CliResult r = run_vkf(translate_args(untrained_model()) + " --beam 256", "a test\n");
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Contains("--beam: must be a whole number in [1, 64]"));
  // 64 is accepted (short outputs: a beam this wide is slow on a CPU device).
  r = run_vkf(
      translate_args(untrained_model()) + " --beam 64 --nbest 64 --max-len-a 0 --max-len-b 3",
      "a test\n");
  CHECK(r.status == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') >= 1);
  CHECK(r.out.starts_with("1\t1\t"));
}
