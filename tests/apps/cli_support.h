#pragma once
// Running the vkf binary as a user does, for the command-line tests: a command with its stdin,
// stdout and stderr in files, a background run that can be signalled, and the small trained
// model several tests start from.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>

namespace vkf::test {

extern const std::string k_vkf;  // the built binary

std::string slurp(const std::filesystem::path& p);

struct CliResult {
  int status = -1;  // exit status; -1 when killed by a signal
  std::string out, err;
};

// Runs `vkf <args>` (shell words) with `stdin_text` on stdin; stdout goes to `stdout_path` when
// given (e.g. /dev/full), else it is captured. Fails the test when stderr mentions the
// validation layer.
CliResult run_vkf(const std::string& args, const std::string& stdin_text = "",
                  const std::string& stdout_path = "");
// Runs a shell command line; `vkf` in it is not replaced (use k_vkf).
CliResult run_shell(const std::string& command);

// `vkf train` on the small corpus with a 32-wide one-layer model into `out`, plus `extra`.
std::string train_args(const std::filesystem::path& out, const std::string& extra);

// A directory trained for 2 steps, made once per test process.
const std::filesystem::path& trained_model();
// A checkpoint of the same model written without training (random weights, no optimizer state)
// and its vocabulary, for the commands that only read one: no device time.
const std::filesystem::path& untrained_model();

// A fresh copy of a model directory (its lock file left out), to damage.
std::filesystem::path copy_of(const std::filesystem::path& model, const std::string& name);
inline std::filesystem::path copy_of_trained_model(const std::string& name) {
  return copy_of(trained_model(), name);
}

// A vkf process in the background (its own process group), stdout and stderr in files.
class Background {
 public:
  Background(const std::string& args, const std::filesystem::path& dir);
  ~Background();
  // Polls `ready` every 100 ms for up to `seconds`; false when it never became true or the
  // process ended first.
  bool wait_for(const std::function<bool()>& ready, double seconds);
  void signal(int sig);
  // Waits up to `seconds` for the exit; returns the exit status, 128 + signal when killed, or
  // -1 on a timeout (the process is then killed).
  int wait(double seconds);
  pid_t pid() const { return pid_; }
  std::string err() const;
  std::string out() const;

 private:
  pid_t pid_ = -1;
  std::filesystem::path dir_;
  bool reaped_ = false;
};

// Rewrites a safetensors file: `edit` changes the parsed JSON header (and may change the data
// bytes); the header is padded to 8 bytes again.
void edit_safetensors(const std::filesystem::path& from, const std::filesystem::path& to,
                      const std::function<void(std::string& header, std::string& data)>& edit);

// True in a build with AddressSanitizer, whose shadow memory defeats `ulimit -v`.
bool address_sanitizer();

}  // namespace vkf::test
