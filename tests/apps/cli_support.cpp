#include "tests/apps/cli_support.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "model/checkpoint.h"
#include "model/data/tokenizer.h"
#include "tests/support/small_corpus.h"

namespace fs = std::filesystem;

namespace vkf::test {

const std::string k_vkf = VKF_BINARY_DIR "/apps/vkf";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

CliResult run_in(const fs::path& dir, const std::string& command, const std::string& stdout_path) {
  const std::string out = stdout_path.empty() ? (dir / "out").string() : stdout_path;
  const std::string cmd =
      "(" + command + ") <" + (dir / "in").string() + " >" + out + " 2>" + (dir / "err").string();
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  if (stdout_path.empty()) r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  INFO(command << "\nstderr:\n" << r.err);
  CHECK(r.err.find("validation") == std::string::npos);
  return r;
}

fs::path next_dir() {
  static int counter = 0;
  return temp_dir("cli-run-" + std::to_string(counter++));
}

}  // namespace

CliResult run_vkf(const std::string& args, const std::string& stdin_text,
                  const std::string& stdout_path) {
  const fs::path dir = next_dir();
  { std::ofstream(dir / "in", std::ios::binary) << stdin_text; }
  return run_in(dir, k_vkf + " " + args, stdout_path);
}

CliResult run_shell(const std::string& command) {
  const fs::path dir = next_dir();
  { std::ofstream(dir / "in"); }
  return run_in(dir, command, "");
}

std::string train_args(const fs::path& out, const std::string& extra) {
  const auto& c = small_corpus();
  return "train --preset tiny --d-model 32 --d-ff 64 --heads 2 --layers 1 --max-tokens 256 "
         "--warmup-steps 10 --train-sets " +
         c.src.string() + " " + c.tgt.string() + " --vocab " + c.vocab.string() + " --out " +
         out.string() + " " + extra;
}

const fs::path& trained_model() {
  static fs::path dir = [] {
    fs::path d = temp_dir("cli-model");
    CliResult r = run_vkf(train_args(d, "--max-steps 2"));
    REQUIRE(r.status == 0);
    return d;
  }();
  return dir;
}

const fs::path& untrained_model() {
  static fs::path dir = [] {
    const fs::path d = temp_dir("cli-untrained");
    const auto& c = small_corpus();
    const model::Tokenizer tok = model::Tokenizer::load(c.vocab.string());
    model::ModelConfig config = model::ModelConfig::preset("tiny");
    config.d_model = 32;
    config.d_ff = 64;
    config.heads = 2;
    config.encoder_layers = config.decoder_layers = 1;
    config.vocab_size = tok.vocab_size();
    config.pad_id = tok.ids().pad;
    config.unk_id = tok.ids().unk;
    config.bos_id = tok.ids().bos;
    config.eos_id = tok.ids().eos;
    config.tokenizer = c.vocab.filename().string();
    config.tokenizer_sha256 = tok.sha256();
    const model::ParamLayout layout(config);
    model::save_checkpoint((d / model::checkpoint_name(2)).string(), config, layout,
                           model::init_parameters(layout, config, 1), 2);
    fs::copy_file(c.vocab, d / c.vocab.filename());
    return d;
  }();
  return dir;
}

fs::path copy_of(const fs::path& model, const std::string& name) {
  const fs::path dir = temp_dir(name);
  for (const auto& e : fs::directory_iterator(model))
    if (e.path().filename() != "train.lock") fs::copy_file(e.path(), dir / e.path().filename());
  return dir;
}

Background::Background(const std::string& args, const fs::path& dir) : dir_(dir) {
  const std::string cmd = "exec " + k_vkf + " " + args + " </dev/null >" + (dir / "out").string() +
                          " 2>" + (dir / "err").string();
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    setpgid(0, 0);  // a group of its own, as a shell job would have
    // Signals as a terminal's job has them, whatever ran the tests (nohup ignores SIGHUP).
    for (int sig : {SIGHUP, SIGINT, SIGTERM}) ::signal(sig, SIG_DFL);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

Background::~Background() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool Background::wait_for(const std::function<bool()>& ready, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      reaped_ = true;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void Background::signal(int sig) {
  ::kill(pid_, sig);
}

int Background::wait(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    const pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) {
      reaped_ = true;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

std::string Background::err() const {
  return slurp(dir_ / "err");
}

std::string Background::out() const {
  return slurp(dir_ / "out");
}

void edit_safetensors(const fs::path& from, const fs::path& to,
                      const std::function<void(std::string&, std::string&)>& edit) {
  const std::string bytes = slurp(from);
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  std::string header = bytes.substr(8, n), data = bytes.substr(8 + n);
  edit(header, data);
  while ((header.size() + 8) % 8) header += ' ';
  const uint64_t size = header.size();
  std::ofstream out(to, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&size), 8);
  out << header << data;
}

bool address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace vkf::test
