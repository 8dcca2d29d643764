// vkf serve: a LibreTranslate-compatible translation service on one device, batching the
// sentences of concurrent requests (apps/serve/). Signals: SIGTERM or SIGINT drain (stop
// accepting, answer every accepted request, exit 0 within --grace), SIGHUP reloads the model.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "apps/serve/http_frontend.h"
#include "apps/serve/metrics.h"
#include "apps/serve/service.h"
#include "apps/tool_env/tool_env.h"
#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "apps/vkf/tuning_choice.h"
#include "engine/engine.h"

namespace vkf::app {
namespace {

struct ServeArgs {
  std::string model, vocab, device, api_key_file;
  std::string tune;
  std::string precision = "auto";
  serve::HttpOptions http;
  TranslatorOptions translator;
  size_t queue_limit = 1024;
  double batch_window_ms = 2;
  double grace_s = 30;
};

std::string read_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("--api-key-file: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string key = ss.str();
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' '))
    key.pop_back();
  if (key.empty()) throw Error("--api-key-file: " + path + " is empty");
  return key;
}

int run(ServeArgs args) {
  args.translator.validate();
  if (args.http.source.empty() || args.http.target.empty())
    throw Error("vkf serve: --source and --target name the model's language pair (e.g. en, de)");
  if (!args.api_key_file.empty()) args.http.api_key = read_key(args.api_key_file);
  args.translator.vocab = args.vocab;
  args.translator.precision = model::parse_precision(args.precision);

  // Every thread started from here on (the driver's, the server's) inherits the mask, so the
  // signals reach only the sigwait below, never a thread in the middle of its work.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is an error on its socket, not an exit

  auto instance = std::make_shared<Instance>(tool::instance_options());
  auto dev = Device::create(instance, tool::device_options({.selector = args.device}));
  // The same kernels as `vkf translate` with the same --tune: the service's translator applies
  // the choice to the device over the problems it runs, before it records its decoder.
  args.translator.tuning = tuning_choice(args.tune);
  args.translator.tuning.note = [](const std::string& line) {
    std::fprintf(stderr, "vkf serve: %s\n", line.c_str());
  };
  serve::ServiceOptions so{args.model, args.translator, args.queue_limit,
                           std::chrono::microseconds(int64_t(args.batch_window_ms * 1000))};
  serve::TranslationService service(*dev, so);
  std::fprintf(stderr, "vkf serve: kernels %s\n", service.tuning().c_str());
  serve::Metrics metrics;
  serve::HttpFrontend frontend(service, metrics, args.http);
  const int port = frontend.bind();
  std::fprintf(stderr, "vkf serve: %s on %s, %s to %s, beam %u, batch %u\n",
               service.checkpoint().c_str(), dev->label().c_str(), args.http.source.c_str(),
               args.http.target.c_str(), args.translator.beam, args.translator.batch_size);
  std::fprintf(stderr, "vkf serve: listening on http://%s:%d\n", args.http.host.c_str(), port);
  std::fflush(stderr);

  std::atomic<bool> stopped{false};
  std::thread signal_thread([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        const std::string why = service.reload("");
        if (why.empty())
          std::fprintf(stderr, "vkf serve: SIGHUP: now serving %s\n", service.checkpoint().c_str());
        else
          std::fprintf(stderr,
                       "vkf serve: SIGHUP: reload refused, the old model keeps serving: %s\n",
                       why.c_str());
        continue;
      }
      if (stopped.exchange(true)) return;  // listen() ended on its own
      std::fprintf(stderr, "vkf serve: %s: draining (answering the accepted requests)\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
      // Past the grace period the process ends anyway, saying so, with a failure status.
      std::thread([grace = args.grace_s] {
        std::this_thread::sleep_for(std::chrono::duration<double>(grace));
        std::fprintf(
            stderr,
            "vkf serve: requests still open after the %.0f s grace period (--grace); exiting\n",
            grace);
        _exit(1);
      }).detach();
      frontend.stop();
      return;
    }
  });
  frontend.listen();  // returns once stopped and the requests in progress are answered
  if (!stopped.exchange(true)) kill(getpid(), SIGTERM);  // wake the signal thread to end it
  signal_thread.join();
  service.drain();
  std::fprintf(stderr, "vkf serve: stopped\n");
  return 0;
}

RegisterCommand reg(
    "serve", "A LibreTranslate-compatible translation service with batching across requests",
    [](CLI::App& sub) {
      auto args = std::make_shared<ServeArgs>();
      auto& o = args->translator;
      auto& h = args->http;
      sub.add_option("--model", args->model,
                     "Checkpoint file, or a directory (its latest; "
                     "SIGHUP or POST /reload read it again)")
          ->required();
      sub.add_option("--vocab", args->vocab,
                     "SentencePiece model (default: the one the checkpoint names, next to it)");
      sub.add_option("--source", h.source, "The model's source language code (e.g. en)")
          ->required();
      sub.add_option("--target", h.target, "The model's target language code (e.g. de)")
          ->required();
      sub.add_option("--device", args->device, "Device: index, vendor or a part of its name");
      sub.add_option("--host", h.host, "Address to listen on")->capture_default_str();
      sub.add_option("--port", h.port, "Port to listen on (0: a free one, printed)")
          ->check(int_range(0, 65535))
          ->capture_default_str();
      add_decoding_options(sub, o);
      sub.add_option("--precision", args->precision, "fp32, fp16 or auto (as vkf translate)")
          ->capture_default_str();
      add_tune_option(sub, args->tune);
      sub.add_option("--api-key-file", args->api_key_file,
                     "File holding the API key /translate and /reload require (default: none; "
                     "then /reload is refused)");
      sub.add_option("--queue-limit", args->queue_limit,
                     "Most lines accepted and not yet answered; more get 429")
          ->check(int_range(1, 1 << 24))
          ->capture_default_str();
      sub.add_option("--batch-window", args->batch_window_ms,
                     "Milliseconds a batch with room to spare waits for more lines before it "
                     "starts (0: none)")
          ->check(real_range(0, 1000))
          ->capture_default_str();
      sub.add_option("--max-body-bytes", h.max_body_bytes, "Largest request body (else 413)")
          ->check(int_range(64, int64_t(1) << 30))
          ->capture_default_str();
      sub.add_option("--max-lines", h.max_lines, "Most lines a request may hold")
          ->check(int_range(1, 1 << 20))
          ->capture_default_str();
      sub.add_option("--max-line-bytes", h.max_line_bytes, "Longest line of a request")
          ->check(int_range(1, 1 << 24))
          ->capture_default_str();
      sub.add_option("--read-timeout", h.read_timeout_s,
                     "Seconds each read of a request's headers or body may wait")
          ->check(int_range(1, 3600))
          ->capture_default_str();
      sub.add_option("--request-read-timeout", h.request_read_timeout_s,
                     "Seconds the whole of a request, headers and body, may take to arrive "
                     "(slow clients; 0: no limit but --read-timeout's)")
          ->check(int_range(0, 86400))
          ->capture_default_str();
      sub.add_option("--request-timeout", h.request_timeout_s,
                     "Seconds a translation may take before 503")
          ->check(int_range(1, 86400))
          ->capture_default_str();
      sub.add_option("--threads", h.threads, "Connections served at once")
          ->check(int_range(1, 4096))
          ->capture_default_str();
      sub.add_option("--grace", args->grace_s, "Seconds SIGTERM waits for open requests")
          ->check(real_range(0, 3600))
          ->capture_default_str();
      return [args]() { return run(*args); };
    });

}  // namespace
}  // namespace vkf::app
