#pragma once
// The one writer of output files and the one reader of whole input files. Every file vkf writes
// whole (checkpoints, vocabularies, tuning files, pipeline caches, bench results and pages) goes
// through AtomicFile; every file it reads whole goes through read_whole_file. Both report what is
// wrong in words, naming the file the user gave.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vkf {

// Writes `path` whole or not at all.
// - A regular file (or a new one) is written to a temporary file in the same folder
//   ("<name>.tmp.<pid>-<counter>-<random>", unique to this process and call) and renamed over
//   it by commit(), after every write, the flush to disk and the close were checked: a full disk
//   leaves the old file as it was. Destroyed without a commit, the temporary file is removed.
// - A symlink is followed to its target, which is then written as above: the link stays a link.
// - A character device or FIFO (/dev/null, a pipe) is written straight into; nothing is ever
//   unlinked or renamed over a file that is not a regular one. A directory, a block device or a
//   socket is refused.
// Throws vkf::Error naming `path` and the reason (e.g. "No space left on device", "the folder
// /x does not exist").
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();
  void write(const void* data, uint64_t bytes);
  void write(const std::string& text) { write(text.data(), text.size()); }
  void commit();
  // The temporary file ("" when writing straight into a device or FIFO).
  const std::string& temporary() const { return tmp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::string path_;    // as given, for messages
  std::string target_;  // the file itself, symlinks followed
  std::string tmp_;
  int fd_ = -1;
};

// Writes `bytes` to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Caps on what read_whole_file takes, per kind of file: none is ever this large when sound.
constexpr uint64_t k_max_text_file_bytes = uint64_t(64) << 20;        // JSON, tuning files
constexpr uint64_t k_max_cache_file_bytes = uint64_t(2) << 30;        // pipeline caches
constexpr uint64_t k_max_checkpoint_file_bytes = uint64_t(64) << 30;  // safetensors

// The bytes of `path`, which must be a regular file (symlinks followed) of at most `max_bytes`.
// Throws vkf::Error naming the file and the reason in words: "does not exist", "is a
// directory", "is not a regular file (a character device)", "is larger than 64 MiB", "too many
// levels of symbolic links". `what` prefixes the name in messages ("the tuning file").
std::string read_whole_file(const std::string& path, uint64_t max_bytes,
                            const std::string& what = "");

// Copies `from` to `to` through an AtomicFile.
void copy_file_atomically(const std::string& from, const std::string& to,
                          uint64_t max_bytes = k_max_checkpoint_file_bytes);

// Throws vkf::Error when `output` (given with flag `output_flag`) is the same file as one of
// `inputs` ({flag, path} pairs; same device and inode, symlinks and hard links included):
// writing it would destroy the input before it is read. Paths that do not exist are skipped.
void refuse_same_file(const std::string& output_flag, const std::string& output,
                      const std::vector<std::pair<std::string, std::string>>& inputs);

// Removes "<name>.tmp.<pid>[-...]" files in `dir` whose process no longer runs (a kill during a
// write leaves them). Files of running processes are kept. Returns the paths removed.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

}  // namespace vkf
