#pragma once
// The HTTP side of `vkf serve`, over cpp-httplib (Debian's libcpp-httplib-dev): LibreTranslate's
// API (POST /translate, GET /languages) plus /health, /metrics, /reload and a page at /, with the
// service's limits. It parses and answers; the translating is TranslationService's.
#include <httplib.h>

#include <cstddef>
#include <memory>
#include <string>

#include "apps/serve/metrics.h"
#include "apps/serve/service.h"
#include "apps/serve/slow_clients.h"

namespace vkf::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 5000;             // 0: any free port (bind() returns it)
  std::string source, target;  // the model's language pair
  std::string api_key;         // "": none needed (then POST /reload is refused)
  size_t max_body_bytes = size_t(1) << 20;
  size_t max_lines = 128;           // lines per request (a q list's items, split at newlines)
  size_t max_line_bytes = 4096;     // bytes per line
  int read_timeout_s = 5;           // for each read of a request's headers or body
  int request_read_timeout_s = 30;  // for the whole of a request's arrival (0: none)
  int request_timeout_s = 120;      // from submitting to answering; then 503
  int threads = 96;                 // connections served at once
};

class HttpFrontend {
 public:
  HttpFrontend(TranslationService& service, Metrics& metrics, const HttpOptions& options);
  // Binds the listening socket and returns its port; throws vkf::Error when it cannot.
  int bind();
  // Serves until stop(); returns once the requests in progress are answered.
  void listen();
  void stop();

 private:
  void translate(const httplib::Request& req, httplib::Response& res);
  bool authorized(const httplib::Request& req, const std::string& body_key) const;
  // One line to stderr and the request in /metrics.
  void log(const httplib::Request& req, int status, size_t bytes);
  // The request has arrived whole and a handler has it (SlowClientGuard).
  void handling(const httplib::Request& req);

  TranslationService& service_;
  Metrics& metrics_;
  HttpOptions options_;
  httplib::Server server_;
  int port_ = -1;
  std::unique_ptr<SlowClientGuard> slow_clients_;  // while listen() runs
};

}  // namespace vkf::serve
