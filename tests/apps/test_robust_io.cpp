// Issue 41's failure modes that the shared mechanisms fix, each as a user meets it: the one writer
// of output files (engine/file_io.h: devices, FIFOs, symlinks, a full disk, a missing folder,
// two writers), the same file as input and output, the one reader of whole files (devices,
// directories, loops), the one JSON parse (depth, excerpts), closed standard streams, signals and
// stop requests, and Mesa's shader cache on a folder that cannot take it. Every test runs the
// real binary; each is named by its item ("robust 41.N").
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/tuning_file.h"
#include "model/checkpoint.h"
#include "tests/apps/cli_support.h"
#include "tests/support/small_corpus.h"
#include "tests/support/vk_test.h"

namespace fs = std::filesystem;
using namespace vkf::test;
using Catch::Contains;

namespace {

const std::string k_ck = "checkpoint-2.safetensors";

std::string q(const fs::path& p) {
  return "'" + p.string() + "'";
}

// Files in `dir` whose name holds ".tmp": what a writer must never leave behind.
std::vector<std::string> temporaries_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos)
      out.push_back(e.path().string());
  return out;
}

bool only_printable(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\n' || (u >= 0x20 && u < 0x7f);
  });
}

std::string average_to(const fs::path& out) {
  const fs::path ck = untrained_model() / k_ck;
  return k_vkf + " average --inputs " + q(ck) + " " + q(ck) + " --out " + q(out);
}

// A tuning file for this device, without entries (no tuning time): what --import takes.
const fs::path& tuning_file() {
  static const fs::path file = [] {
    const fs::path f = temp_dir("robust-io-tuning") / "t.json";
    vkf::TuningFile t;
    t.key = vkf::TuningKey::of(vkf::test::device().info());
    vkf::write_tuning_file(f.string(), t);
    return f;
  }();
  return file;
}

}  // namespace

TEST_CASE("robust 41.1: an output that is a device, a FIFO or a symlink is written through",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-special");
  // A symlink: its target gets the checkpoint, the link stays a link.
  std::ofstream(dir / "target.safetensors") << "old";
  fs::create_symlink("target.safetensors", dir / "link.safetensors");
  CliResult r = run_shell(average_to(dir / "link.safetensors"));
  CHECK(r.status == 0);
  CHECK(fs::is_symlink(dir / "link.safetensors"));
  CHECK(vkf::model::load_checkpoint((dir / "target.safetensors").string()).step == 2);

  // A FIFO: written straight into (a reader gets the whole checkpoint), never replaced.
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  r = run_shell("timeout 60 cat " + q(dir / "fifo") + " >" + q(dir / "from-fifo") + " & " +
                average_to(dir / "fifo") + "; s=$?; wait; exit $s");
  CHECK(r.status == 0);
  CHECK(fs::is_fifo(dir / "fifo"));
  CHECK(slurp(dir / "from-fifo") == slurp(dir / "target.safetensors"));

  // Character devices of its own (root can make them, as CI runs): the null device takes the
  // bytes, the full device refuses them with the system's reason; both stay devices.
  if (::mknod((dir / "mynull").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod((dir / "myfull").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    WARN("cannot make device files here (not root): the device cases are skipped");
  } else {
    r = run_shell(average_to(dir / "mynull"));
    CHECK(r.status == 0);
    CHECK(fs::is_character_file(dir / "mynull"));
    r = run_shell(average_to(dir / "myfull"));
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("No space left on device"));
    CHECK(fs::is_character_file(dir / "myfull"));
  }
  // A directory is refused, and left alone.
  fs::create_directory(dir / "a-dir");
  r = run_shell(average_to(dir / "a-dir"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("a-dir: it is a directory"));
  CHECK(temporaries_in(dir).empty());
}

TEST_CASE("robust 41.1+41.16: a missing folder is named, not the temporary file",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-nofolder");
  CliResult r = run_shell(average_to(dir / "missing" / "x.safetensors"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("the folder " + (dir / "missing").string() + " does not exist"));
  CHECK(r.err.find(".tmp") == std::string::npos);
}

namespace {

// `command` (vkf and its arguments) with no room for any file: a file-size limit of 0 fails
// writes as a full disk does (EFBIG); SIGXFSZ, which would kill the process instead, is ignored
// as a shell can arrange. Its output goes through a pipe, which the limit does not cover, and
// ends with its exit status ("exit N").
std::string with_a_full_disk(const std::string& env, const std::string& command) {
  return "{ (trap '' XFSZ; ulimit -f 0; " + env + " exec " + command +
         "); echo \"exit $?\"; } 2>&1 | cat";
}

}  // namespace

TEST_CASE("robust 41.13b+41.14: a full disk or another writer's temporary leaves the old file",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-full");
  const fs::path cache = dir / "cache";
  const std::string env = "export VKF_CACHE_DIR=" + q(cache) + ";";
  const std::string translate = k_vkf + " translate --model " + q(untrained_model()) + " --beam 1";
  // A first run fills the pipeline cache.
  CliResult r = run_shell(env + " echo 'a house' | " + translate);
  REQUIRE(r.status == 0);
  std::vector<fs::path> caches;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".bin") caches.push_back(e.path());
  REQUIRE(caches.size() == 1);
  const std::string good = slurp(caches[0]);
  REQUIRE(good.size() > 24);
  // The same run on a full disk: the good cache stays as it was, and no temporary is left.
  r = run_shell("echo 'a house' | " + with_a_full_disk(env, translate));
  CHECK_THAT(r.out, Contains("exit 0"));
  CHECK(slurp(caches[0]) == good);
  CHECK(temporaries_in(cache).empty());

  // A tuning file: the old one stays whole on a full disk, and no temporary is left.
  const fs::path t = dir / "t.json";
  fs::copy_file(tuning_file(), t);
  const std::string before = slurp(t);
  r = run_shell(
      with_a_full_disk(env, k_vkf + " tune --import " + q(tuning_file()) + " --out " + q(t)));
  CHECK_THAT(r.out, Contains("File too large"));
  CHECK_THAT(r.out, Contains("exit 1"));
  CHECK(slurp(t) == before);
  CHECK(temporaries_in(dir).empty());
  // Another writer's temporary file under the old fixed name (here a directory, so that it
  // cannot be taken over) does not stop this one: temporary names are unique.
  fs::create_directory(dir / "t.json.tmp");
  r = run_shell(env + k_vkf + " tune --import " + q(tuning_file()) + " --out " + q(t));
  CHECK(r.status == 0);
  CHECK(slurp(t) == slurp(tuning_file()));
}

TEST_CASE("robust 41.2: an output that is one of the inputs is refused", "[apps][cli][robust]") {
  const fs::path dir = copy_of(untrained_model(), "robust-io-same");
  const auto& c = small_corpus();
  {
    std::ofstream f(dir / "same.en");
    f << "a house\nthe cat\n";
  }
  const std::string text = slurp(dir / "same.en");
  const std::string ck = slurp(dir / k_ck);
  const std::string translate = k_vkf + " translate --model " + q(dir) + " --beam 1";
  // --output equal to --input, to the checkpoint, to a symlink of the input, and to the file
  // standard input comes from.
  fs::create_symlink("same.en", dir / "link.en");
  for (const std::string& args :
       {" --input " + q(dir / "same.en") + " --output " + q(dir / "same.en"),
        " --input " + q(dir / "same.en") + " --output " + q(dir / k_ck),
        " --input " + q(dir / "same.en") + " --output " + q(dir / "link.en"),
        " --output " + q(dir / "same.en") + " <" + q(dir / "same.en")}) {
    CliResult r = run_shell(translate + args);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("is the same file as"));
  }
  CHECK(slurp(dir / "same.en") == text);
  CHECK(slurp(dir / k_ck) == ck);
  // average over one of its inputs; vocab over its corpus.
  CliResult r = run_shell(k_vkf + " average --inputs " + q(dir / k_ck) + " " + q(dir / k_ck) +
                          " --out " + q(dir / k_ck));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("--out " + (dir / k_ck).string() + " is the same file as"));
  fs::copy_file(c.src, dir / "corpus.en");
  r = run_shell(k_vkf + " vocab --train-sets " + q(dir / "corpus.en") + " " + q(c.tgt) +
                " --vocab-size 200 --out " + q(dir / "corpus.en"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("is the same file as --train-sets"));
  CHECK(slurp(dir / "corpus.en") == slurp(c.src));
  CHECK(slurp(dir / k_ck) == ck);
}

TEST_CASE("robust 41.3: closed standard streams never receive a data file's bytes",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-closed");
  {
    std::ofstream f(dir / "in.en");
    f << "a house\n";
  }
  // stderr closed: the log must not become the first line of the output file.
  CliResult r =
      run_shell(k_vkf + " translate --model " + q(untrained_model()) + " --beam 1 --input " +
                q(dir / "in.en") + " --output " + q(dir / "o.txt") + " 2>&-");
  CHECK(r.status == 0);
  const std::string out = slurp(dir / "o.txt");
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  CHECK(out.find("vkf translate") == std::string::npos);
}

// No ';' or ',' in a name: catch_discover_tests and Catch's filters split there.
TEST_CASE("robust 41.5: a stopped training exits 143 after its checkpoint and SIGHUP is SIGTERM",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-hup");
  const fs::path run = dir / "run";
  // A fresh run (no trained model to make first): stopped once it has taken a step.
  Background b(train_args(run, "--max-steps 1000000 --log-every 1"), dir);
  REQUIRE(b.wait_for(
      [&] { return slurp(run / "train.jsonl").find("\"step\":1,") != std::string::npos; }, 600));
  b.signal(SIGHUP);
  const int status = b.wait(300);
  INFO(b.err());
  CHECK(status == 143);
  CHECK_THAT(b.err(), Contains("interrupted: writing a checkpoint"));
  const auto checkpoints = vkf::model::list_checkpoints(run.string());
  REQUIRE(!checkpoints.empty());
  CHECK(checkpoints.back().first >= 1);
}

TEST_CASE("robust 41.8: deep or binary JSON is refused with a short printable message",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-deep");
  const std::string deep = std::string(100000, '[') + "64" + std::string(100000, ']');
  // A checkpoint whose config nests d_model 100,000 arrays deep.
  edit_safetensors(untrained_model() / k_ck, dir / "deep.safetensors",
                   [&](std::string& header, std::string&) {
                     nlohmann::json j = nlohmann::json::parse(header);
                     std::string config = j["__metadata__"]["config"].get<std::string>();
                     const size_t at = config.find("\"d_model\":") + 10;
                     config.replace(at, config.find(',', at) - at, deep);
                     j["__metadata__"]["config"] = config;
                     header = j.dump();
                   });
  std::ofstream(dir / "deep.json") << "{\"d_model\":" << deep << "}";
  std::ofstream(dir / "t1.en") << "a house\n";
  const std::string vocab = q(untrained_model() / "vocab.model");
  for (const std::string& args :
       {"translate --model " + q(dir / "deep.safetensors") + " --vocab " + vocab + " --input " +
            q(dir / "t1.en"),
        "average --inputs " + q(dir / "deep.safetensors") + " --out " + q(dir / "x.safetensors"),
        "tune --import " + q(dir / "deep.json") + " --out " + q(dir / "y.json"),
        "bench compare " + q(dir / "deep.json"),
        train_args(dir / "run", "--config " + q(dir / "deep.json"))}) {
    CliResult r = run_shell(k_vkf + " " + args);
    INFO(args);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains("deeper than 64 levels"));
    CHECK(r.err.size() < 1000);
  }
  // A header with binary bytes and a long bad token: the message quotes a printable excerpt.
  edit_safetensors(untrained_model() / k_ck, dir / "binary.safetensors",
                   [&](std::string& header, std::string&) {
                     header = "{\"a\":\"" + std::string(5000, 'x') + "\xff\xfe\x01\"}";
                   });
  CliResult r = run_shell(k_vkf + " average --inputs " + q(dir / "binary.safetensors") + " --out " +
                          q(dir / "z.safetensors"));
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("is not JSON"));
  CHECK(r.err.size() < 1000);
  CHECK(only_printable(r.err));
}

TEST_CASE("robust 41.9+41.16: whole files are regular files of bounded size, named when not",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-reader");
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  std::ofstream(dir / "t1.en") << "a house\n";
  // Bounded by the shell too: before the fix these read /dev/zero until memory ran out (not the
  // address space under AddressSanitizer, whose shadow memory needs terabytes of it).
  const std::string guard =
      std::string(address_sanitizer() ? "" : "ulimit -v 4000000 2>/dev/null; ") + "timeout 60 env ";
  const std::string translate = k_vkf + " translate --model " + q(untrained_model()) +
                                " --beam 1 --input " + q(dir / "t1.en") + " --tune ";
  struct Case {
    std::string command, message;
  };
  for (const Case& c : std::vector<Case>{
           {translate + "/dev/zero", "/dev/zero: it is a character device, not a regular file"},
           {translate + q(dir), dir.string() + ": it is a directory"},
           {translate + q(dir / "loop-a"), "too many levels of symbolic links"},
           {"VKF_TUNE=/dev/zero " + translate.substr(0, translate.size() - 8),
            "/dev/zero: it is a character device"},
           {k_vkf + " tune --import /dev/zero --out " + q(dir / "x.json"),
            "/dev/zero: it is a character device"},
           {k_vkf + " bench compare /dev/zero", "/dev/zero: it is a character device"}}) {
    CliResult r = run_shell(guard + c.command);
    INFO(c.command);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains(c.message));
  }
  // A pipeline cache that is a directory, or a link to /dev/zero: named, and left alone.
  const fs::path cache = dir / "cache";
  CliResult r = run_shell("VKF_CACHE_DIR=" + q(cache) + " " + translate + "off");
  REQUIRE(r.status == 0);
  fs::path bin;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".bin") bin = e.path();
  REQUIRE(!bin.empty());
  fs::remove(bin);
  fs::create_directory(bin);
  r = run_shell(guard + "VKF_CACHE_DIR=" + q(cache) + " " + translate + "off");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("the pipeline cache " + bin.string() + ": it is a directory"));
  CHECK(fs::is_directory(bin));
  fs::remove(bin);
  fs::create_symlink("/dev/zero", bin);
  r = run_shell(guard + "VKF_CACHE_DIR=" + q(cache) + " " + translate + "off");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("the pipeline cache " + bin.string() + ": it is a character device"));
  CHECK(fs::is_symlink(bin));
}

TEST_CASE("robust 41.11: a training still reading its data honours the first stop request",
          "[apps][cli][robust]") {
  const fs::path dir = temp_dir("robust-io-endless");
  const auto& c = small_corpus();
  const std::string train = k_vkf + " train --preset tiny --vocab " + q(c.vocab) +
                            " --max-steps 1 --out " + q(dir / "run") + " --train-sets ";
  // A corpus without end (a TSV stream of short lines): GNU timeout's one SIGTERM (delivered
  // twice: to the process and its group) must end the run while it reads, not a second signal.
  // The KILL 50 s later only keeps a failing run from hanging the test.
  const auto start = std::chrono::steady_clock::now();
  CliResult r = run_shell(
      "while :; do printf 'a house\\tein Haus\\n'; sleep 0.01; done | timeout --preserve-status "
      "-k 50 3 " +
      train + "/dev/stdin");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.status == 143);
  CHECK_THAT(r.err, Contains("stopped by SIGTERM while reading /dev/stdin"));
  CHECK(seconds < 30);
  // /dev/zero is one line without end: refused once it passes 256 MiB, without a signal.
  r = run_shell("timeout -k 5 60 " + train + "/dev/zero /dev/zero");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Contains("line 1 of /dev/zero is longer than 256.00 MiB without a newline"));
}

TEST_CASE("robust 41.13a: Mesa's shader cache is off where its folder cannot take it",
          "[apps][cli][robust]") {
  // A cache folder that cannot be made.
  CliResult r = run_shell("env -u MESA_SHADER_CACHE_DIR VKF_CACHE_DIR=/dev/null/vkf-cache " +
                          k_vkf + " bleu /dev/null /dev/null");
  CHECK_THAT(r.err, Contains("Mesa's shader cache is off: its folder /dev/null/vkf-cache/mesa-"));
  // A nearly full filesystem (a 1 MiB tmpfs, where root may mount one, as CI runs).
  const fs::path dir = temp_dir("robust-io-small-fs");
  if (std::system(("mount -t tmpfs -o size=1m tmpfs " + q(dir) + " 2>/dev/null").c_str()) != 0) {
    WARN("cannot mount a tmpfs here: the small-filesystem case is skipped");
    return;
  }
  r = run_shell("env -u MESA_SHADER_CACHE_DIR VKF_CACHE_DIR=" + q(dir) + " " + k_vkf +
                " bleu /dev/null /dev/null");
  const int unmounted = std::system(("umount " + q(dir)).c_str());
  CHECK(unmounted == 0);
  CHECK_THAT(r.err, Contains("Mesa's shader cache is off: its folder " + dir.string() + "/mesa-"));
  CHECK_THAT(r.err, Contains("MiB free (it needs 64)"));
}
