#pragma once
// ParallelTextReader: streams raw sentence pairs from two line-aligned plain-text files or from one
// TSV file (source \t target), one pair at a time.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "model/data/line_reader.h"

namespace vkf::model {

struct CorpusFiles {
  std::string source;
  std::string target;  // empty: `source` is a TSV file holding both sides

  static CorpusFiles two_files(std::string source, std::string target) {
    return {std::move(source), std::move(target)};
  }
  static CorpusFiles tsv(std::string path) { return {std::move(path), {}}; }
  bool is_tsv() const { return target.empty(); }
  std::string describe() const { return is_tsv() ? source : source + " + " + target; }
};

struct RawPair {
  std::string_view source, target;  // valid until the next read
  int64_t line = 0;                 // 1-based
  bool well_formed = true;          // false: a TSV line without exactly one tab
  bool too_long = false;            // a side over the line cap (then both views are empty)
};

class ParallelTextReader {
 public:
  // Throws vkf::Error naming the file that cannot be opened.
  explicit ParallelTextReader(const CorpusFiles& files,
                              uint64_t max_line_bytes = k_default_max_line_bytes);
  // False at the end. Throws vkf::Error naming both files and their line counts when one of two
  // files ends before the other: the pairing would be wrong from the first missing line on.
  bool next(RawPair& pair);

 private:
  [[noreturn]] void throw_mismatch(LineReader& longer, LineReader& shorter);
  CorpusFiles files_;
  std::unique_ptr<LineReader> source_, target_;
};

}  // namespace vkf::model
