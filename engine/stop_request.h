#pragma once
// The process's request to stop (a signal a command chose to handle: `vkf train`'s Ctrl-C,
// SIGTERM and SIGHUP). Set from a signal handler, read by every long phase: reading text
// (model/data/line_reader.h), training a vocabulary, tuning, and the trainer between
// micro-batches. A phase with nothing to save ends by throwing StopRequested; the trainer
// finishes its micro-batch and writes a checkpoint first.
#include <atomic>
#include <string>

#include "engine/error.h"

namespace vkf {

// Async-signal-safe: records the first request and its signal; later ones are ignored here.
void request_stop(int signal) noexcept;
bool stop_requested() noexcept;
// The signal of the first request (0: none).
int stop_signal() noexcept;
// The flag itself, for code that polls an atomic (model::TrainerOptions::stop_requested).
const std::atomic<bool>& stop_flag() noexcept;
// The exit status that reports the request as shells report the signal: 130 for SIGINT, 143 for
// SIGTERM and SIGHUP (handled as SIGTERM), 128 + the signal otherwise.
int stop_exit_status() noexcept;

class StopRequested : public Error {
 public:
  using Error::Error;
};

// Throws StopRequested ("stopped by SIGTERM while <phase>") when a stop was requested.
void throw_if_stop_requested(const std::string& phase);

}  // namespace vkf
