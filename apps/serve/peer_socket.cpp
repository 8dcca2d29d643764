#include "apps/serve/peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace vkf::serve {
namespace {

struct Address {
  std::string host;  // "" for a family other than IPv4 or IPv6
  int port = -1;
};

Address address_of(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    return {text, ntohs(in.sin_port)};
  }
  if (a.ss_family == AF_INET6) {
    const auto& in = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &in.sin6_addr, text, sizeof text);
    return {text, ntohs(in.sin6_port)};
  }
  return {};
}

bool address_matches(const sockaddr_storage& a, const std::string& addr, int port) {
  const Address x = address_of(a);
  return x.port >= 0 && x.port == port && (addr.empty() || addr == x.host);
}

// The first socket descriptor of the process for which `match(fd)` holds, or -1.
template <typename F>
int find_socket(F&& match) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (match(int(fd))) {
      found = int(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace

std::vector<PortConnection> connections_on(int local_port) {
  std::vector<PortConnection> out;
  find_socket([&](int fd) {
    sockaddr_storage peer{}, local{};
    socklen_t pl = sizeof peer, ll = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) == 0 &&
        address_matches(local, "", local_port) &&
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0) {
      const Address p = address_of(peer);
      out.push_back({fd, socket_inode(fd), p.host + ":" + std::to_string(p.port)});
    }
    return false;  // every one
  });
  return out;
}

uint64_t socket_inode(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? uint64_t(st.st_ino) : 0;
}

int find_connection(const std::string& remote_addr, int remote_port, int local_port) {
  return find_socket([&](int fd) {
    sockaddr_storage peer{}, local{};
    socklen_t pl = sizeof peer, ll = sizeof local;
    return getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) == 0 &&
           getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) == 0 &&
           address_matches(peer, remote_addr, remote_port) &&
           address_matches(local, "", local_port);
  });
}

bool widen_backlog(int port, int backlog) {
  const int fd = find_socket([&](int s) {
    int listening = 0;
    socklen_t n = sizeof listening;
    sockaddr_storage local{};
    socklen_t ll = sizeof local;
    return getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &listening, &n) == 0 && listening &&
           getsockname(s, reinterpret_cast<sockaddr*>(&local), &ll) == 0 &&
           address_matches(local, "", port);
  });
  return fd >= 0 && listen(fd, backlog) == 0;
}

bool peer_gone(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly close
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return false;  // a pipelined next request waits: the client is still there
}

}  // namespace vkf::serve
