#pragma once
// Whether the client of a request still waits for its answer. cpp-httplib 0.11 (Debian 12) does
// not hand its handlers the connection, so the socket is found by its addresses among the
// process's descriptors: the one whose local and peer address match the request's. A peer that
// closed its end reads as end-of-file (recv with MSG_PEEK returns 0) or a reset.
#include <string>

namespace vkf::serve {

// The descriptor of the TCP connection from remote_addr:remote_port to local_port, or -1.
int find_connection(const std::string& remote_addr, int remote_port, int local_port);
// True when the peer has closed or reset the connection (never blocks).
bool peer_gone(int fd);

}  // namespace vkf::serve
