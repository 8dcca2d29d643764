#include "engine/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "engine/error.h"

namespace vkf {
namespace fs = std::filesystem;

namespace {

// Linux follows at most 40 links in one lookup; the same limit here.
constexpr int k_max_symlinks = 40;

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string folder_of(const std::string& path) {
  const std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// Follows `path` through symlinks to the file they name, which need not exist yet (a dangling
// link is written through, as a shell's `>` does).
std::string resolve_links(const std::string& path) {
  std::string p = path;
  for (int hop = 0; hop <= k_max_symlinks; ++hop) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string link(4096, '\0');
    const ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
    if (n < 0 || size_t(n) >= link.size())
      throw Error("cannot write " + path + ": cannot read the symbolic link " + p);
    link.resize(size_t(n));
    p = link.front() == '/' ? link : (fs::path(folder_of(p)) / link).string();
  }
  throw Error("cannot write " + path + ": too many levels of symbolic links");
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char buf[64];
  std::snprintf(buf, sizeof buf, ".tmp.%ld-%llu-%08llx", long(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>((salt ^ (salt >> 32)) & 0xffffffffu));
  return buf;
}

// Why `path` could not be opened, in words.
std::string open_error(const std::string& path, int err) {
  if (err == ENOENT) {
    // Say which part is missing: the folder, or the file itself.
    std::error_code ec;
    const std::string folder = folder_of(path);
    if (!fs::is_directory(folder, ec)) return "the folder " + folder + " does not exist";
    return "it does not exist";
  }
  if (err == ELOOP) return "too many levels of symbolic links";
  return std::strerror(err);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("cannot write a file with an empty name");
  target_ = resolve_links(path_);
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
      throw Error("cannot write " + path_ + ": it is " + kind_of(st.st_mode) +
                  ", not a regular file");
    // A device or a FIFO takes the bytes as they come; there is nothing to replace.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) throw Error("cannot write " + path_ + ": " + open_error(target_, errno));
    return;
  }
  tmp_ = target_ + unique_suffix();
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    const std::string folder = folder_of(target_);
    std::error_code ec;
    if (err == ENOENT || err == ENOTDIR || !fs::is_directory(folder, ec))
      throw Error("cannot write " + path_ + ": the folder " + folder +
                  (fs::exists(folder, ec) ? " is not a folder" : " does not exist"));
    throw Error("cannot write " + path_ + " (in " + folder + "): " + std::strerror(err));
  }
  // A replaced file keeps its permissions.
  if (::stat(target_.c_str(), &st) == 0) (void)::fchmod(fd_, st.st_mode & 07777);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
  }
}

void AtomicFile::fail(const std::string& what, int err) {
  ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  throw Error(what + " " + path_ + " failed: " + std::strerror(err) +
              (tmp_.empty() ? std::string() : " (" + path_ + " was left as it was)"));
}

void AtomicFile::write(const void* data, uint64_t bytes) {
  if (fd_ < 0) throw Error("writing " + path_ + " after it was committed");
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    // Linux writes at most ~2 GiB per call; partial writes and EINTR (a signal) just go on.
    const ssize_t n = ::write(fd_, p, std::min<uint64_t>(bytes, uint64_t(1) << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (n == 0) fail("writing", EIO);
    p += n;
    bytes -= uint64_t(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("committing " + path_ + " twice");
  // fsync before the rename: after a power loss the new name must not point at missing data.
  // Devices and FIFOs cannot be synced (EINVAL, EROFS): their bytes are already handed over.
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail("flushing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    throw Error("closing " + path_ + " failed: " + std::strerror(err));
  }
  if (tmp_.empty()) return;
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    throw Error("cannot write " + path_ +
                ": renaming its temporary file failed: " + std::strerror(err));
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFile out(path);
  out.write(bytes);
  out.commit();
}

std::string read_whole_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const std::string name = what.empty() ? path : what + " " + path;
  // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw Error("cannot read " + name + ": " + open_error(path, errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd);
    if (st.st_mode == 0) throw Error("cannot read " + name + ": " + std::strerror(err));
    throw Error("cannot read " + name + ": it is " + kind_of(st.st_mode) +
                (S_ISDIR(st.st_mode) ? "" : ", not a regular file"));
  }
  const auto too_large = [&] {
    ::close(fd);
    return Error("cannot read " + name + ": it is larger than " + format_bytes(max_bytes));
  };
  if (uint64_t(st.st_size) > max_bytes) throw too_large();
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  // Read to the end, not to st_size: a file that grows (or a /proc file, size 0) is still
  // bounded by the cap.
  for (;;) {
    if (done == bytes.size()) {
      if (bytes.size() >= max_bytes) {
        char probe;
        const ssize_t n = ::read(fd, &probe, 1);
        if (n == 0) break;
        if (n > 0) throw too_large();
        if (errno == EINTR) continue;
      } else {
        bytes.resize(std::min<uint64_t>(max_bytes, std::max<uint64_t>(bytes.size() * 2, 4096)));
      }
    }
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error("reading " + name + " failed after " + std::to_string(done) +
                  " bytes: " + std::strerror(err));
    }
    if (n == 0) break;
    done += size_t(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

void copy_file_atomically(const std::string& from, const std::string& to, uint64_t max_bytes) {
  write_file_atomically(to, read_whole_file(from, max_bytes));
}

void refuse_same_file(const std::string& output_flag, const std::string& output,
                      const std::vector<std::pair<std::string, std::string>>& inputs) {
  struct stat out {};
  if (output.empty() || ::stat(output.c_str(), &out) != 0) return;
  // Devices are shared by design: --input /dev/stdin and --output /dev/stdout may meet.
  if (!S_ISREG(out.st_mode)) return;
  for (const auto& [flag, path] : inputs) {
    struct stat in {};
    if (path.empty() || ::stat(path.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw Error(output_flag + " " + output + " is the same file as " + flag + " " + path +
                  ": writing it would destroy the input; choose another " + output_flag);
  }
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return removed;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    // <file>.tmp.<decimal pid>, optionally followed by "-<counter>-<hex>" (AtomicFile), that a
    // process left when it died. Neither part holds a '.', so only the last ".tmp." can start
    // that suffix.
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0 || !entry.is_regular_file(ec)) continue;
    const std::string suffix = name.substr(at + 5);
    const std::string digits = suffix.substr(0, suffix.find('-'));
    if (digits.empty() || digits.size() > 20 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        !std::all_of(suffix.begin() + long(digits.size()), suffix.end(), [](char c) {
          return c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        }))
      continue;
    uint64_t pid = 0;
    const bool parsed =
        std::from_chars(digits.data(), digits.data() + digits.size(), pid).ec == std::errc();
    // This process writes nothing yet when a run starts, so its own pid marks a file left by an
    // earlier process that had the same pid (containers reuse small pids). Any other pid counts
    // as alive while kill(pid, 0) finds it (EPERM: alive, someone else's).
    const bool ours = parsed && pid == uint64_t(::getpid());
    const bool alive = parsed && pid > 0 && pid <= uint64_t(std::numeric_limits<pid_t>::max()) &&
                       !ours && (::kill(pid_t(pid), 0) == 0 || errno == EPERM);
    if (alive) continue;
    if (fs::remove(entry.path(), ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

}  // namespace vkf
