#pragma once
// Small pieces several subcommands share: durations and numeric ranges on the command line,
// opening the device, and turning Ctrl-C into a request to stop cleanly.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "engine/device.h"
#include "model/config.h"
#include "model/decode/translator.h"

namespace vkf::app {

// "90", "90s", "15m", "2h", "1h30m" -> seconds, at most k_max_duration_seconds. Throws vkf::Error
// naming `flag` on anything else.
constexpr double k_max_duration_seconds = 366.0 * 24 * 3600;
double parse_duration(const std::string& text, const std::string& flag);

// Validators for numeric flags, run on the text before CLI11 converts it (CLI11 would wrap "-1"
// into an unsigned flag's largest value). The text must be a whole number (int_range) or a
// finite number (real_range) inside the range, which the message gives:
// "--lr: must be a number in (0, 100], got '-1'".
constexpr int64_t k_no_limit = std::numeric_limits<int64_t>::max();
CLI::Validator int_range(int64_t lo, int64_t hi = k_no_limit);
enum class Bound { closed, open };
CLI::Validator real_range(double lo, double hi, Bound lo_bound = Bound::closed,
                          Bound hi_bound = Bound::closed);

// --max-line-bytes, for every command that reads text.
void add_max_line_bytes(CLI::App& sub, uint64_t& value);

// The decoding flags `vkf translate` and `vkf serve` share, with one set of ranges: --beam,
// --alpha, --max-len-a, --max-len-b and --batch-size, into decode's or the API's options.
template <typename DecodingOptions>
void add_decoding_options(CLI::App& sub, DecodingOptions& o) {
  sub.add_option("--beam", o.beam, "Beam size (1 = greedy)")
      ->check(int_range(1, model::decode::k_max_beam))
      ->capture_default_str();
  sub.add_option("--alpha", o.alpha, "Length penalty ((5 + len) / 6)^alpha")
      ->check(real_range(0, 10))
      ->capture_default_str();
  sub.add_option("--max-len-a", o.max_len_a,
                 "Maximum output length = a * source length + b (capped by the model)")
      ->check(real_range(0, 1000))
      ->capture_default_str();
  sub.add_option("--max-len-b", o.max_len_b, "See --max-len-a")
      ->check(int_range(0, model::k_max_positions))
      ->capture_default_str();
  sub.add_option("--batch-size", o.batch_size, "Most sentences decoded at once")
      ->check(int_range(1, 4096))
      ->capture_default_str();
}

// The device the selector names ("" = the best one), with its own instance.
std::unique_ptr<Device> open_device(const std::string& selector);

// SIGINT, SIGTERM and SIGHUP request a stop (engine/stop_request.h: every phase honours it; a
// training stops before its next micro-batch and writes a checkpoint, then exits 130 for SIGINT,
// 143 for SIGTERM or SIGHUP). Signals within two seconds of the first are the same request:
// `timeout` and process-group kills deliver one signal twice. A signal after that ends the
// process at once (the same status), saying so.
const std::atomic<bool>& install_stop_handler();

// Routes std::cout through a buffer of its own that writes to file descriptor 1 and remembers
// why its first write failed (errno), which stdio loses once a stream has failed: writing to
// std::cerr flushes std::cout first, and a driver may flush stdio's stdout, so a full disk can
// fail a write far from the command's output. main() calls it before any command; commands
// write their output through std::cout.
void watch_standard_output();
// Flushes standard output and throws vkf::Error, naming the cause where known, when anything
// written to it was lost (a full disk, a closed pipe reader, /dev/full). main() calls it after
// every command.
void finish_standard_output();
// printf to std::cout, so that formatted output takes the same path as the rest.
void print(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace vkf::app
