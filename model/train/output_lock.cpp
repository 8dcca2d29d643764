#include "model/train/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/error.h"

namespace vkf::model {

OutputLock::OutputLock(const std::string& dir)
    : path_((std::filesystem::path(dir) / k_output_lock_name).string()) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create the output directory " + dir + ": " + ec.message());
  // No O_TRUNC: the holder's pid must survive until we know we are the holder.
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open " + path_ + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    std::string holder;
    if (err == EWOULDBLOCK) {
      char buf[256] = {};
      const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      holder = n > 0 ? std::string(buf, size_t(n)) : std::string();
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    }
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw Error("cannot lock " + path_ + ": " + std::strerror(err));
    throw Error(dir + " is in use by another training (" +
                (holder.empty() ? std::string("a process that has not written its pid yet")
                                : "process " + holder) +
                ", holding " + path_ +
                "): two runs in one directory would overwrite each other's checkpoints; wait "
                "for it to end or choose another --out");
  }
  char host[128] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  const std::string text = std::to_string(::getpid()) + " on " + host + "\n";
  // Best effort: the lock is what counts, the text only makes the refusal clearer.
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, text.data(), text.size(), 0);
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
}

}  // namespace vkf::model
