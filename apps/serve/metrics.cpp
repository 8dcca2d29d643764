#include "apps/serve/metrics.h"

#include <cstdio>

namespace vkf::serve {
namespace {

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

void Metrics::record(const std::string& path, int status, double seconds) {
  std::lock_guard lock(mutex_);
  // Unknown paths are one label, so a scanner cannot grow the table without bound.
  const bool known = path == "/translate" || path == "/languages" || path == "/health" ||
                     path == "/metrics" || path == "/reload" || path == "/";
  ++requests_[{known ? path : "other", status}];
  if (path != "/translate") return;
  for (size_t i = 0; i < k_buckets.size(); ++i)
    if (seconds <= k_buckets[i]) {
      ++latency_[i];
      break;
    }
  ++latency_count_;
  latency_sum_ += seconds;
}

std::string Metrics::render(const ServiceStats& s, bool healthy) const {
  std::lock_guard lock(mutex_);
  std::string o;
  o += "# HELP vkf_serve_requests_total HTTP requests answered, by path and status.\n";
  o += "# TYPE vkf_serve_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    o += "vkf_serve_requests_total{path=\"" + key.first + "\",status=\"" +
         std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  o += "# HELP vkf_serve_request_seconds Latency of POST /translate, read to answer.\n";
  o += "# TYPE vkf_serve_request_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < k_buckets.size(); ++i) {
    cumulative += latency_[i];
    o += "vkf_serve_request_seconds_bucket{le=\"" + fmt(k_buckets[i]) + "\"} " +
         std::to_string(cumulative) + "\n";
  }
  o += "vkf_serve_request_seconds_bucket{le=\"+Inf\"} " + std::to_string(latency_count_) + "\n";
  o += "vkf_serve_request_seconds_sum " + fmt(latency_sum_) + "\n";
  o += "vkf_serve_request_seconds_count " + std::to_string(latency_count_) + "\n";
  o += "# HELP vkf_serve_queue_lines Lines accepted and waiting for a batch.\n";
  o += "# TYPE vkf_serve_queue_lines gauge\n";
  o += "vkf_serve_queue_lines " + std::to_string(s.waiting_lines) + "\n";
  o += "# HELP vkf_serve_running_lines Lines in the decoding batch.\n";
  o += "# TYPE vkf_serve_running_lines gauge\n";
  o += "vkf_serve_running_lines " + std::to_string(s.running_lines) + "\n";
  o += "# HELP vkf_serve_joined_lines_total Lines that joined a batch already decoding.\n";
  o += "# TYPE vkf_serve_joined_lines_total counter\n";
  o += "vkf_serve_joined_lines_total " + std::to_string(s.counts.joined_lines) + "\n";
  o += "# HELP vkf_serve_decoder_steps_total Decoder steps run.\n";
  o += "# TYPE vkf_serve_decoder_steps_total counter\n";
  o += "vkf_serve_decoder_steps_total " + std::to_string(s.counts.decoder_steps) + "\n";
  o += "# HELP vkf_serve_step_lines_total Lines decoding, summed over the decoder steps.\n";
  o += "# TYPE vkf_serve_step_lines_total counter\n";
  o += "vkf_serve_step_lines_total " + std::to_string(s.counts.step_lines) + "\n";
  o += "# HELP vkf_serve_batches_total Batches decoded, by the number of lines they opened with.\n";
  o += "# TYPE vkf_serve_batches_total counter\n";
  for (const auto& [size, n] : s.batch_sizes)
    o += "vkf_serve_batches_total{lines=\"" + std::to_string(size) + "\"} " + std::to_string(n) +
         "\n";
  o += "# HELP vkf_serve_output_tokens_total Output tokens (EOS included) of the answers.\n";
  o += "# TYPE vkf_serve_output_tokens_total counter\n";
  o += "vkf_serve_output_tokens_total " + std::to_string(s.output_tokens) + "\n";
  o += "# HELP vkf_serve_busy_seconds_total Time the device worker spent decoding.\n";
  o += "# TYPE vkf_serve_busy_seconds_total counter\n";
  o += "vkf_serve_busy_seconds_total " + fmt(s.busy_seconds) + "\n";
  o += "# HELP vkf_serve_tokens_per_second Output tokens per second of decoding time.\n";
  o += "# TYPE vkf_serve_tokens_per_second gauge\n";
  o += "vkf_serve_tokens_per_second " +
       fmt(s.busy_seconds > 0 ? double(s.output_tokens) / s.busy_seconds : 0.0) + "\n";
  o += "# HELP vkf_serve_reloads_total Checkpoint reloads, by result.\n";
  o += "# TYPE vkf_serve_reloads_total counter\n";
  o += "vkf_serve_reloads_total{result=\"ok\"} " + std::to_string(s.reloads_ok) + "\n";
  o += "vkf_serve_reloads_total{result=\"refused\"} " + std::to_string(s.reloads_failed) + "\n";
  o += "# HELP vkf_serve_up 1 while the model serves, 0 after a device failure.\n";
  o += "# TYPE vkf_serve_up gauge\n";
  o += std::string("vkf_serve_up ") + (healthy ? "1" : "0") + "\n";
  return o;
}

}  // namespace vkf::serve
