#pragma once
// Progress for long runs: a short line for people (step, epoch, loss, perplexity, learning rate,
// tokens/s, elapsed, ETA) and a JSONL record of every metric for machines.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace vkf::model {

struct StepMetrics {
  uint64_t step = 0;
  uint64_t epoch = 0;
  double loss_per_token = 0;  // label-smoothed
  double nll_per_token = 0;   // for perplexity
  double lr = 0;
  double tokens_per_second = 0;  // source + target
  double elapsed_seconds = 0;
  std::optional<double> eta_seconds;
  // Mixed precision only: the dynamic loss scale and the steps skipped for overflow so far.
  std::optional<double> loss_scale;
  uint64_t skipped_steps = 0;
};

std::string format_duration(double seconds);  // "1h02m", "3m05s", "42s"
std::string progress_line(const StepMetrics& m);
nlohmann::json to_json(const StepMetrics& m);

// Appends one JSON object a line, flushed each time so a crash loses nothing written.
class JsonlLog {
 public:
  explicit JsonlLog(const std::string& path);
  void write(const nlohmann::json& record);

 private:
  std::ofstream out_;
  std::string path_;
};

// ETA from the fraction done of whichever limit (steps, epochs, time) ends the run first.
std::optional<double> estimate_eta(double elapsed_seconds, double fraction_done);

}  // namespace vkf::model
