#pragma once
// One training per output directory: an exclusive flock(2) on DIR/train.lock, held for the whole
// run. The kernel drops it when the process ends, however it ends (a crash or kill -9 included),
// so there is never a stale lock to remove by hand. The file holds the holder's pid and host, so
// a refused run can say which process has the directory.
#include <string>

namespace vkf::model {

class OutputLock {
 public:
  // Creates `dir` when missing and takes the lock, or throws vkf::Error naming the process that
  // holds it. Never waits.
  explicit OutputLock(const std::string& dir);
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// "train.lock"
constexpr const char* k_output_lock_name = "train.lock";

}  // namespace vkf::model
