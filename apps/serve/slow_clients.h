#pragma once
// A deadline for the whole of a request's arrival. cpp-httplib 0.11 (Debian 12) times each read
// of a request (--read-timeout), not the request: a client that sends a byte of its headers or
// body every few seconds (slowloris) holds one of the connection threads for as long as it
// likes, and enough of them hold them all. The guard gives each connection a deadline
// (--request-read-timeout) from its accept, or from the answer to its previous request, to the
// moment a handler takes its request: a thread lists the process's connections to the port
// every `poll` (by socket inode, so a reused descriptor is never mistaken for its predecessor)
// and shuts down those past it. The blocked read then fails and httplib closes the connection,
// as nginx does with client_header_timeout.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace vkf::serve {

class SlowClientGuard {
 public:
  using Clock = std::chrono::steady_clock;
  // `on_close(peer)` is told of each connection shut down ("addr:port"), from the guard's thread.
  SlowClientGuard(int port, std::chrono::milliseconds deadline,
                  std::function<void(const std::string& peer)> on_close,
                  std::chrono::milliseconds poll = std::chrono::milliseconds(250));
  ~SlowClientGuard();  // stops the thread
  SlowClientGuard(const SlowClientGuard&) = delete;
  SlowClientGuard& operator=(const SlowClientGuard&) = delete;

  // A handler has the request of the connection remote_addr:remote_port: no deadline while it
  // runs (a translation may take up to --request-timeout).
  void handling(const std::string& remote_addr, int remote_port);
  // Its answer is written: the connection's next request (keep-alive) has a deadline from now.
  void answered(const std::string& remote_addr, int remote_port);
  uint64_t closed() const { return closed_.load(); }

 private:
  struct Connection {
    int fd = -1;
    Clock::time_point since;
    bool handled = false;
    std::string peer;
  };
  void run();
  void scan();
  void mark(const std::string& remote_addr, int remote_port, bool handled);

  const int port_;
  const std::chrono::milliseconds deadline_, poll_;
  const std::function<void(const std::string&)> on_close_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<uint64_t, Connection> connections_;  // by socket inode
  std::atomic<uint64_t> closed_{0};
  std::thread thread_;
};

}  // namespace vkf::serve
