#include "apps/vkf/app_options.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <regex>

#include "apps/tool_env/tool_env.h"
#include "engine/error.h"
#include "engine/instance.h"
#include "engine/stop_request.h"
#include "model/data/line_reader.h"

namespace vkf::app {

double parse_duration(const std::string& text, const std::string& flag) {
  static const std::regex pattern(R"((?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?)");
  std::smatch m;
  if (text.empty() || text.size() > 40 || !std::regex_match(text, m, pattern))
    throw Error(flag + " '" + text + "' is not a duration (examples: 90, 90s, 15m, 2h, 1h30m)");
  double seconds = 0;
  if (m[1].matched) seconds += 3600.0 * std::stod(m[1]);
  if (m[2].matched) seconds += 60.0 * std::stod(m[2]);
  if (m[3].matched) seconds += std::stod(m[3]);
  // The callers turn it into clock ticks, which a duration of 10^20 s overflows (into the past:
  // a search that ends at once). A year is beyond any run's use.
  if (!(seconds <= k_max_duration_seconds))
    throw Error(flag + " '" + text + "' is longer than a year (" +
                std::to_string(int64_t(k_max_duration_seconds)) + " s), the most it takes");
  return seconds;
}

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

CLI::Validator int_range(int64_t lo, int64_t hi) {
  const std::string range = hi == k_no_limit
                                ? ">= " + std::to_string(lo)
                                : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, err] = std::from_chars(text.data(), end, v);
        if (err == std::errc() && ptr == end && v >= lo && v <= hi) return {};
        return "must be a whole number " + range + ", got '" + text + "'";
      },
      "INT " + range);
}

CLI::Validator real_range(double lo, double hi, Bound lo_bound, Bound hi_bound) {
  std::string range;
  if (std::isinf(hi))
    range = (lo_bound == Bound::open ? "> " : ">= ") + number_text(lo);
  else
    range = "in " + std::string(lo_bound == Bound::open ? "(" : "[") + number_text(lo) + ", " +
            number_text(hi) + (hi_bound == Bound::open ? ")" : "]");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end == text.c_str() + text.size() && errno == 0;
        const bool above = lo_bound == Bound::open ? v > lo : v >= lo;
        const bool below = hi_bound == Bound::open ? v < hi : v <= hi;
        if (parsed && std::isfinite(v) && above && below) return {};
        return "must be a number " + range + ", got '" + text + "'";
      },
      "NUMBER " + range);
}

void add_max_line_bytes(CLI::App& sub, uint64_t& value) {
  sub.add_option("--max-line-bytes", value,
                 "Longer input lines are reported and skipped (never read into memory)")
      ->check(int_range(1, int64_t(1) << 31))
      ->capture_default_str();
}

std::unique_ptr<Device> open_device(const std::string& selector) {
  auto instance = std::make_shared<Instance>(tool::instance_options());
  return Device::create(instance, tool::device_options({.selector = selector}));
}

namespace {

std::atomic<int64_t> g_first_signal_ns{0};
// GNU timeout sends its signal to the child and then to its whole process group, so the child
// gets it twice within microseconds; a person pressing Ctrl-C twice takes longer than this.
constexpr int64_t k_same_request_ns = 2'000'000'000;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void say(const char* text) {
  (void)!::write(STDERR_FILENO, text, std::strlen(text));
}

extern "C" void on_stop_signal(int sig) {
  const int saved_errno = errno;
  const int64_t now = monotonic_ns() | 1;  // never 0, which means "no signal yet"
  int64_t first = 0;
  // Whoever sets the first time owns the request; handlers on two threads cannot both win.
  if (g_first_signal_ns.compare_exchange_strong(first, now)) {
    request_stop(sig);
    say("\nvkf: stop requested: a training finishes its current micro-batch and writes a "
        "checkpoint; reading, tuning and building a vocabulary end now (signal again to leave at "
        "once without a checkpoint)\n");
  } else if (now - first >= k_same_request_ns) {
    say("vkf: second stop request: leaving now, without a checkpoint of this step\n");
    std::_Exit(stop_exit_status());
  }
  errno = saved_errno;
}

}  // namespace

const std::atomic<bool>& install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  // The signals blocked while any of their handlers runs; SA_RESTART so a signal does not fail
  // the read or write it interrupts. SIGHUP (a closed terminal or SSH session) is a request like
  // SIGTERM: without a handler it killed the run without its checkpoint.
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    // A SIGHUP ignored by nohup stays ignored: the user asked for that.
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    if (sig == SIGHUP && old.sa_handler == SIG_IGN) continue;
    sigaction(sig, &sa, nullptr);
  }
  return stop_flag();
}

namespace {

// std::cout's buffer: writes to file descriptor 1 itself and keeps the errno of the first write
// that failed. Not through stdio's stdout, whose buffer anything in the process may flush (a
// driver's teardown does, on NVIDIA's): a failure there loses its errno and the data before
// finish_standard_output() can see either. stdio's own buffer is flushed before each write here,
// so that anything printed through it comes out first, in order. Line-buffered on a terminal,
// like stdio.
class StandardOutput : public std::streambuf {
 public:
  StandardOutput() : terminal_(isatty(STDOUT_FILENO) == 1) {
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  bool failed() const { return failed_; }
  int first_errno() const { return first_errno_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    if (terminal_ && c == '\n' && !drain()) return traits_type::eof();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const std::streamsize written = std::streambuf::xsputn(s, n);
    if (terminal_ && written > 0 && std::memchr(s, '\n', size_t(written)) && !drain()) return 0;
    return written;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  // Writes out what is buffered; false (and the cause kept) once any write has failed. The
  // buffer is emptied either way: what could not be written is lost, and said to be.
  bool drain() {
    const char* at = pbase();
    const char* end = pptr();
    setp(buffer_, buffer_ + sizeof buffer_);
    if (std::fflush(stdout) != 0) fail(errno);
    while (!failed_ && at < end) {
      const ssize_t n = ::write(STDOUT_FILENO, at, size_t(end - at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        fail(n < 0 ? errno : EIO);
      else
        at += n;
    }
    return !failed_;
  }
  void fail(int err) {
    if (!failed_) first_errno_ = err;
    failed_ = true;
  }
  char buffer_[1 << 16];
  bool terminal_;
  bool failed_ = false;
  int first_errno_ = 0;
};

StandardOutput* g_stdout_buffer = nullptr;

}  // namespace

void watch_standard_output() {
  if (g_stdout_buffer) return;
  // Never destroyed: std::cout is flushed at exit, after function-local statics are gone.
  g_stdout_buffer = new StandardOutput;
  std::cout.rdbuf(g_stdout_buffer);
}

void print(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    std::string text(size_t(n) + 1, '\0');
    std::vsnprintf(text.data(), text.size(), format, again);
    std::cout.write(text.data(), n);
  }
  va_end(again);
}

void finish_standard_output() {
  errno = 0;
  std::cout.flush();
  const bool stream_failed = !std::cout;
  const int flush_failed = std::fflush(stdout);
  int err = g_stdout_buffer && g_stdout_buffer->failed() ? g_stdout_buffer->first_errno() : 0;
  if (err == 0 && flush_failed != 0) err = errno;
  if (stream_failed || flush_failed != 0 || std::ferror(stdout) ||
      (g_stdout_buffer && g_stdout_buffer->failed()))
    throw Error(std::string("writing to standard output failed") +
                (err ? std::string(": ") + std::strerror(err) : std::string()) +
                "; the output is incomplete");
}

}  // namespace vkf::app
