#include "engine/standard_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace vkf {

void open_closed_standard_streams() noexcept {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free number, which is `fd` when those below it are open (they
    // are: this loop opened them first).
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

}  // namespace vkf
