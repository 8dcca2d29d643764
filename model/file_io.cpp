#include "model/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/error.h"
#include "model/safetensors.h"

namespace vkf::model {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(temporary_path(path_)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot write " + tmp_ + ": " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::fail(const std::string& what, int err) {
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  throw Error(what + " " + tmp_ + " failed: " + std::strerror(err) + " (" + path_ +
              " was not written)");
}

void AtomicFile::write(const void* data, uint64_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    // Linux writes at most ~2 GiB per call; partial writes and EINTR (a signal) just go on.
    const ssize_t n = ::write(fd_, p, std::min<uint64_t>(bytes, uint64_t(1) << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    p += n;
    bytes -= uint64_t(n);
  }
}

void AtomicFile::commit() {
  // fsync before the rename: after a power loss the new name must not point at missing data.
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("flushing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw Error("closing " + tmp_ + " failed: " + std::strerror(err));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw Error("cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(err));
  }
}

std::string read_whole_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + " is not a regular file");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      throw Error("reading " + path + " failed after " + std::to_string(done) + " of " +
                  std::to_string(bytes.size()) + " bytes" +
                  (err ? std::string(": ") + std::strerror(err) : " (the file shrank)"));
    }
    done += size_t(n);
  }
  ::close(fd);
  return bytes;
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  const std::string bytes = read_whole_file(from);
  AtomicFile out(to);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace vkf::model
