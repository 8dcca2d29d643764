#include "model/train/progress.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/error.h"

namespace vkf::model {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

std::string progress_line(const StepMetrics& m) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "step %6llu  epoch %3llu  loss %7.4f  ppl %9.2f  lr %.3e  %8.0f tok/s  %s  eta %s",
                static_cast<unsigned long long>(m.step), static_cast<unsigned long long>(m.epoch),
                m.loss_per_token, std::exp(std::min(m.nll_per_token, 50.0)), m.lr,
                m.tokens_per_second, format_duration(m.elapsed_seconds).c_str(),
                m.eta_seconds ? format_duration(*m.eta_seconds).c_str() : "?");
  std::string line = buf;
  if (m.loss_scale) {
    std::snprintf(buf, sizeof buf, "  scale %g  skipped %llu", *m.loss_scale,
                  static_cast<unsigned long long>(m.skipped_steps));
    line += buf;
  }
  return line;
}

nlohmann::json to_json(const StepMetrics& m) {
  nlohmann::json j{{"step", m.step},
                   {"epoch", m.epoch},
                   {"loss", m.loss_per_token},
                   {"nll", m.nll_per_token},
                   {"ppl", std::exp(std::min(m.nll_per_token, 50.0))},
                   {"lr", m.lr},
                   {"tokens_per_second", m.tokens_per_second},
                   {"elapsed_seconds", m.elapsed_seconds}};
  if (m.eta_seconds) j["eta_seconds"] = *m.eta_seconds;
  if (m.loss_scale) {
    j["loss_scale"] = *m.loss_scale;
    j["skipped_steps"] = m.skipped_steps;
  }
  return j;
}

JsonlLog::JsonlLog(const std::string& path) : out_(path, std::ios::app), path_(path) {
  if (!out_) throw Error("cannot open log " + path + " for appending");
}

void JsonlLog::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
  if (!out_) throw Error("writing log " + path_ + " failed (disk full?)");
}

std::optional<double> estimate_eta(double elapsed_seconds, double fraction_done) {
  if (fraction_done <= 0.0 || fraction_done > 1.0 || elapsed_seconds <= 0.0) return std::nullopt;
  return elapsed_seconds * (1.0 - fraction_done) / fraction_done;
}

}  // namespace vkf::model
