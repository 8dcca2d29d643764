#include "apps/serve/slow_clients.h"

#include <sys/socket.h>

#include <set>
#include <utility>
#include <vector>

#include "apps/serve/peer_socket.h"

namespace vkf::serve {

SlowClientGuard::SlowClientGuard(int port, std::chrono::milliseconds deadline,
                                 std::function<void(const std::string& peer)> on_close,
                                 std::chrono::milliseconds poll)
    : port_(port), deadline_(deadline), poll_(poll), on_close_(std::move(on_close)) {
  thread_ = std::thread([this] { run(); });
}

SlowClientGuard::~SlowClientGuard() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SlowClientGuard::handling(const std::string& remote_addr, int remote_port) {
  mark(remote_addr, remote_port, true);
}

void SlowClientGuard::answered(const std::string& remote_addr, int remote_port) {
  mark(remote_addr, remote_port, false);
}

void SlowClientGuard::mark(const std::string& remote_addr, int remote_port, bool handled) {
  const int fd = find_connection(remote_addr, remote_port, port_);
  const uint64_t inode = fd >= 0 ? socket_inode(fd) : 0;
  if (inode == 0) return;  // gone already
  std::lock_guard lock(mutex_);
  Connection& c = connections_[inode];
  c.fd = fd;
  c.since = Clock::now();
  c.handled = handled;
  if (c.peer.empty()) c.peer = remote_addr + ":" + std::to_string(remote_port);
}

void SlowClientGuard::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, poll_, [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    scan();
    lock.lock();
  }
}

void SlowClientGuard::scan() {
  const std::vector<PortConnection> now_open = connections_on(port_);
  const auto now = Clock::now();
  std::vector<std::pair<int, uint64_t>> overdue;
  {
    std::lock_guard lock(mutex_);
    std::set<uint64_t> seen;
    for (const PortConnection& p : now_open) {
      if (p.inode == 0) continue;
      seen.insert(p.inode);
      auto [it, fresh] = connections_.try_emplace(p.inode);
      Connection& c = it->second;
      if (fresh) c.since = now;  // accepted since the last scan (within one poll)
      c.fd = p.fd;
      if (c.peer.empty()) c.peer = p.peer;
      if (!c.handled && now - c.since > deadline_) overdue.emplace_back(p.fd, p.inode);
    }
    std::erase_if(connections_, [&](const auto& e) { return !seen.count(e.first); });
  }
  for (const auto& [fd, inode] : overdue) {
    // The descriptor may have been closed and reused since the listing: only the same socket.
    if (socket_inode(fd) != inode) continue;
    std::string peer;
    {
      std::lock_guard lock(mutex_);
      auto it = connections_.find(inode);
      if (it == connections_.end() || it->second.handled) continue;  // taken meanwhile
      peer = it->second.peer;
      it->second.since = Clock::time_point::max();  // once; the socket closes soon
    }
    shutdown(fd, SHUT_RDWR);
    closed_.fetch_add(1);
    if (on_close_) on_close_(peer);
  }
}

}  // namespace vkf::serve
