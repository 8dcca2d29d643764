#pragma once
// Files written whole or not at all, and files read whole, with every error reported: a full
// disk, a quota or a lost mount must never leave a half-written checkpoint or vocabulary that
// looks complete, nor a temporary file that nothing removes.
#include <cstdint>
#include <string>

namespace vkf::model {

// Writes `path` through "<path>.tmp.<pid>" (temporary_path): write() appends, commit() checks
// every write, flushes the data to disk and renames the file into place. Destroyed without a
// commit (an exception on the way), it removes the temporary file. Throws vkf::Error naming the
// file and the system's reason (e.g. "No space left on device").
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  void write(const void* data, uint64_t bytes);
  void commit();
  const std::string& temporary() const { return tmp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::string path_, tmp_;
  int fd_ = -1;
};

// The bytes of a regular file. Throws vkf::Error naming the file when it cannot be read.
std::string read_whole_file(const std::string& path);

// Copies `from` to `to` through an AtomicFile.
void copy_file_atomically(const std::string& from, const std::string& to);

}  // namespace vkf::model
