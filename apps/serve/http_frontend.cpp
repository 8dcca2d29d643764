#include "apps/serve/http_frontend.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "apps/serve/page.h"
#include "apps/serve/peer_socket.h"
#include "engine/error.h"
#include "engine/json_limits.h"
#include "model/data/utf8.h"

namespace vkf::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// When the request's reading ended (set before routing, read by the logger on the same thread).
thread_local Clock::time_point t_start;
// Set by a handler that could not answer (the client left): it logged the request itself.
thread_local bool t_client_gone = false;
// Whether t_start is this request's: a request refused while being read (413) is never routed.
thread_local bool t_routed = false;

void error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  // A parser's message may quote the request's invalid bytes: replaced, not thrown on.
  res.set_content(json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

// The key compared in constant time for a given key length: every byte is looked at whatever
// the first difference, so the time does not say how much of a guess was right.
bool same_key(const std::string& given, const std::string& key) {
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (size_t i = 0; i < key.size(); ++i)
    diff |= unsigned(static_cast<unsigned char>(key[i]) ^
                     static_cast<unsigned char>(i < given.size() ? given[i] : 0));
  return diff == 0;
}

std::string language_name(const std::string& code) {
  static const std::pair<const char*, const char*> names[] = {
      {"en", "English"}, {"de", "German"},  {"fr", "French"},     {"es", "Spanish"},
      {"it", "Italian"}, {"nl", "Dutch"},   {"pt", "Portuguese"}, {"ru", "Russian"},
      {"zh", "Chinese"}, {"ja", "Japanese"}};
  for (const auto& [c, n] : names)
    if (code == c) return n;
  return code;
}

// A request's fields, from a JSON body or a form (url-encoded or multipart).
struct Fields {
  json q;  // string or array of strings
  std::string source, target, format, api_key;
  uint32_t max_length = 0;  // vkf's own field: the output limit per line, in tokens (0: none)
};

// The longest output a request may ask for: the most positions any model has.
constexpr int64_t k_max_length_field = 1 << 16;

std::string form_value(const httplib::Request& req, const std::string& name) {
  if (req.has_param(name.c_str())) return req.get_param_value(name.c_str());
  if (req.has_file(name.c_str())) return req.get_file_value(name.c_str()).content;
  return {};
}

// Throws a message for a 400.
Fields parse_fields(const httplib::Request& req) {
  Fields f;
  const std::string type = req.get_header_value("Content-Type");
  if (type.find("application/json") != std::string::npos) {
    json body;
    try {
      // The one JSON parse (engine/json_limits.h): a nesting limit and printable messages.
      body = parse_json(req.body, "the body");
    } catch (const Error& e) {
      throw Error(std::string("invalid JSON: ") + e.what());
    }
    if (!body.is_object()) throw Error("invalid JSON: the body must be an object");
    auto text = [&](const char* k) -> std::string {
      if (!body.contains(k) || body[k].is_null()) return {};
      if (!body[k].is_string()) throw Error(std::string("'") + k + "' must be a string");
      return body[k].get<std::string>();
    };
    if (body.contains("q")) f.q = body["q"];
    f.source = text("source");
    f.target = text("target");
    f.format = text("format");
    f.api_key = text("api_key");
    if (body.contains("max_length") && !body["max_length"].is_null())
      f.max_length =
          uint32_t(json_whole(body["max_length"], "'max_length'", 1, k_max_length_field));
    return f;
  }
  // Forms: a repeated q is a list, as a JSON array.
  const size_t n = req.get_param_value_count("q");
  if (n > 1) {
    f.q = json::array();
    for (size_t i = 0; i < n; ++i) f.q.push_back(req.get_param_value("q", i));
  } else if (n == 1 || req.has_file("q")) {
    f.q = form_value(req, "q");
  }
  f.source = form_value(req, "source");
  f.target = form_value(req, "target");
  f.format = form_value(req, "format");
  f.api_key = form_value(req, "api_key");
  if (const std::string m = form_value(req, "max_length"); !m.empty()) {
    // Read as the JSON body's field is (json_whole), so both give the same answer; text that is
    // not a JSON number stays a string, which json_whole refuses, quoting it.
    json v = json::parse(m, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) v = m;
    f.max_length = uint32_t(json_whole(v, "'max_length'", 1, k_max_length_field));
  }
  return f;
}

// A text's lines (the model translates a line at a time).
void split_lines(const std::string& text, std::vector<std::string>& out) {
  size_t start = 0;
  for (;;) {
    const size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? nl : nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    if (nl == std::string::npos) return;
    start = nl + 1;
  }
}

std::string join_lines(const std::vector<std::string>& texts, size_t from, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) s += (i ? "\n" : "") + texts[from + i];
  return s;
}

}  // namespace

HttpFrontend::HttpFrontend(TranslationService& service, Metrics& metrics,
                           const HttpOptions& options)
    : service_(service), metrics_(metrics), options_(options) {
  server_.new_task_queue = [n = options_.threads] { return new httplib::ThreadPool(size_t(n)); };
  server_.set_read_timeout(options_.read_timeout_s, 0);
  server_.set_write_timeout(options_.read_timeout_s, 0);
  server_.set_keep_alive_timeout(options_.read_timeout_s);
  server_.set_payload_max_length(options_.max_body_bytes);
  // httplib's default sets SO_REUSEPORT, with which a second server on a port in use binds
  // without an error and takes half its connections. SO_REUSEADDR alone still lets a restart
  // bind while the old connections linger in TIME_WAIT.
  server_.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
    t_start = Clock::now();
    t_client_gone = false;
    t_routed = true;
    // Routing comes after the headers and before the body: a request without one has arrived.
    // One with a body is taken when its handler starts.
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) handling(req);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server_.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413)
      error(res, 413,
            "the request body is larger than " + std::to_string(options_.max_body_bytes) +
                " bytes (--max-body-bytes)");
    else if (res.status == 404)
      error(res, 404, "no such endpoint: " + req.method + " " + req.path);
    else
      error(res, res.status, "HTTP " + std::to_string(res.status));
  });
  server_.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        error(res, 500, what);
      });
  server_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (!t_client_gone) log(req, res.status, res.body.size());
    t_client_gone = t_routed = false;
    if (slow_clients_) slow_clients_->answered(req.remote_addr, req.remote_port);
  });

  server_.Post("/translate", [this](const httplib::Request& req, httplib::Response& res) {
    handling(req);
    translate(req, res);
  });
  server_.Get("/languages", [this](const httplib::Request&, httplib::Response& res) {
    json out = json::array();
    out.push_back({{"code", options_.source},
                   {"name", language_name(options_.source)},
                   {"targets", json::array({options_.target})}});
    out.push_back({{"code", options_.target},
                   {"name", language_name(options_.target)},
                   {"targets", json::array()}});
    res.set_content(out.dump(), "application/json");
  });
  server_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool ok = service_.healthy();
    res.status = ok ? 200 : 503;
    res.set_content(json{{"status", ok ? "ready" : "not ready"},
                         {"model", service_.checkpoint()},
                         {"source", options_.source},
                         {"target", options_.target}}
                        .dump(),
                    "application/json");
  });
  server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(service_.stats(), service_.healthy()),
                    "text/plain; version=0.0.4");
  });
  server_.Post("/reload", [this](const httplib::Request& req, httplib::Response& res) {
    handling(req);
    if (options_.api_key.empty())
      return error(res, 403, "POST /reload needs an API key: start vkf serve with --api-key-file");
    if (!authorized(req, "")) return error(res, 403, "invalid API key");
    const std::string why = service_.reload("");
    if (!why.empty()) return error(res, 409, "reload refused, the old model keeps serving: " + why);
    res.set_content(json{{"model", service_.checkpoint()}}.dump(), "application/json");
  });
  server_.Get("/", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(page_html(options_.source, options_.target, !options_.api_key.empty()),
                    "text/html; charset=utf-8");
  });
}

void HttpFrontend::log(const httplib::Request& req, int status, size_t bytes) {
  const double s = t_routed ? std::chrono::duration<double>(Clock::now() - t_start).count() : 0.0;
  metrics_.record(req.path, status, s);
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::fprintf(stderr, "%s %s:%d \"%s %s\" %d %zu %.1f ms%s\n", when, req.remote_addr.c_str(),
               req.remote_port, req.method.c_str(), req.path.c_str(), status, bytes, s * 1e3,
               status == 499 ? " (the client closed the connection)" : "");
}

void HttpFrontend::handling(const httplib::Request& req) {
  if (slow_clients_) slow_clients_->handling(req.remote_addr, req.remote_port);
}

bool HttpFrontend::authorized(const httplib::Request& req, const std::string& body_key) const {
  if (options_.api_key.empty()) return true;
  std::string given = body_key;
  const std::string auth = req.get_header_value("Authorization");
  if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
  return same_key(given, options_.api_key);
}

void HttpFrontend::translate(const httplib::Request& req, httplib::Response& res) {
  Fields f;
  try {
    f = parse_fields(req);
  } catch (const std::exception& e) {
    return error(res, 400, e.what());
  }
  if (!authorized(req, f.api_key))
    return error(res, 403, "invalid API key (api_key in the body, or Authorization: Bearer)");
  if (f.q.is_null()) return error(res, 400, "invalid request: missing q parameter");
  if (f.source.empty() || f.target.empty())
    return error(res, 400, "invalid request: missing source or target parameter");
  const std::string pair = options_.source + " to " + options_.target;
  if (f.source != options_.source && f.source != "auto")
    return error(res, 400,
                 "source language '" + f.source + "' is not served: this model translates " + pair);
  if (f.target != options_.target)
    return error(res, 400,
                 "target language '" + f.target + "' is not served: this model translates " + pair);
  if (!f.format.empty() && f.format != "text")
    return error(res, 400, "format '" + f.format + "' is not supported: only text");

  // Every text, split into lines; per text, where its lines start.
  const bool list = f.q.is_array();
  std::vector<std::string> texts;
  if (list) {
    for (const auto& x : f.q) {
      if (!x.is_string()) return error(res, 400, "invalid request: q must hold strings");
      texts.push_back(x.get<std::string>());
    }
  } else if (f.q.is_string()) {
    texts.push_back(f.q.get<std::string>());
  } else {
    return error(res, 400, "invalid request: q must be a string or a list of strings");
  }
  std::vector<std::string> lines;
  std::vector<size_t> first(texts.size() + 1, 0);
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!model::is_valid_utf8(texts[i]))
      return error(res, 400,
                   "invalid request: text " + std::to_string(i + 1) + " of q is not valid UTF-8");
    first[i] = lines.size();
    split_lines(texts[i], lines);
    if (lines.size() > options_.max_lines)
      return error(res, 400,
                   "too many lines: at most " + std::to_string(options_.max_lines) +
                       " per request (--max-lines)");
  }
  first[texts.size()] = lines.size();
  for (const auto& l : lines)
    if (l.size() > options_.max_line_bytes)
      return error(res, 400,
                   "a line is longer than " + std::to_string(options_.max_line_bytes) +
                       " bytes (--max-line-bytes)");

  auto ticket = service_.submit(lines, f.max_length);
  if (!ticket) {
    if (!service_.healthy()) return error(res, 503, "the model is not serving");
    res.set_header("Retry-After", "1");
    return error(res, 429, "too many lines waiting; retry later");
  }
  const int fd = find_connection(req.remote_addr, req.remote_port, req.local_port);
  const auto deadline = Clock::now() + std::chrono::seconds(options_.request_timeout_s);
  while (!ticket->wait_for(std::chrono::milliseconds(20))) {
    if (fd >= 0 && peer_gone(fd)) {  // nobody to answer: free its batch slots
      service_.cancel(ticket);
      // Logged here: there is no answer to write, and httplib may not log a failed write.
      t_client_gone = true;
      log(req, 499, 0);
      return error(res, 499, "client closed the connection");
    }
    if (Clock::now() > deadline) {
      service_.cancel(ticket);
      return error(
          res, 503,
          "the translation took longer than " + std::to_string(options_.request_timeout_s) + " s");
    }
  }
  std::lock_guard lock(ticket->mutex);
  if (!ticket->error.empty()) return error(res, 500, ticket->error);
  json out;
  if (list) {
    out = json::array();
    for (size_t i = 0; i < texts.size(); ++i)
      out.push_back(join_lines(ticket->texts, first[i], first[i + 1] - first[i]));
  } else {
    out = join_lines(ticket->texts, 0, ticket->texts.size());
  }
  res.set_content(json{{"translatedText", out}}.dump(), "application/json");
}

int HttpFrontend::bind() {
  const int port = options_.port == 0
                       ? server_.bind_to_any_port(options_.host)
                       : (server_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port < 0)
    throw Error("vkf serve: cannot listen on " + options_.host + ":" +
                std::to_string(options_.port) + " (--host, --port): in use or not an address here");
  // As many waiting connections as connections served at once, at least SOMAXCONN's usual 128.
  if (!widen_backlog(port, std::max(128, options_.threads)))
    std::fprintf(stderr,
                 "vkf serve: warning: could not raise the listen backlog of port %d; "
                 "bursts of clients may see refused connections\n",
                 port);
  port_ = port;
  return port;
}

void HttpFrontend::listen() {
  if (options_.request_read_timeout_s > 0 && port_ >= 0)
    slow_clients_ = std::make_unique<SlowClientGuard>(
        port_, std::chrono::seconds(options_.request_read_timeout_s),
        [this](const std::string& peer) {
          metrics_.record("", 408, 0.0);
          std::fprintf(stderr,
                       "vkf serve: closed the connection from %s: no whole request within %d s "
                       "(--request-read-timeout)\n",
                       peer.c_str(), options_.request_read_timeout_s);
        });
  server_.listen_after_bind();
  slow_clients_.reset();
}

void HttpFrontend::stop() {
  server_.stop();
}

}  // namespace vkf::serve
