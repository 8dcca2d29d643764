#pragma once
// Whether the client of a request still waits for its answer. cpp-httplib 0.11 (Debian 12) does
// not hand its handlers the connection, so the socket is found by its addresses among the
// process's descriptors: the one whose local and peer address match the request's. A peer that
// closed its end reads as end-of-file (recv with MSG_PEEK returns 0) or a reset.
#include <cstdint>
#include <string>
#include <vector>

namespace vkf::serve {

// The descriptor of the TCP connection from remote_addr:remote_port to local_port, or -1.
int find_connection(const std::string& remote_addr, int remote_port, int local_port);
// The process's TCP connections whose local port is `local_port` (its listening socket left
// out): each one's descriptor, socket inode (unique while the socket lives, unlike the
// descriptor) and peer, "addr:port".
struct PortConnection {
  int fd = -1;
  uint64_t inode = 0;
  std::string peer;
};
std::vector<PortConnection> connections_on(int local_port);
// The inode of socket `fd`, or 0 when it is not a socket.
uint64_t socket_inode(int fd);
// True when the peer has closed or reset the connection (never blocks).
bool peer_gone(int fd);
// Raises the listen backlog of the process's listening socket on `port` (Debian's cpp-httplib
// is built with a backlog of 5: a burst of clients, 64 at once, overflows it and the kernel
// drops or resets their connections). listen() again on a listening socket only changes its
// backlog. False when no such socket was found.
bool widen_backlog(int port, int backlog);

}  // namespace vkf::serve
