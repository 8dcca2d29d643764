#include "model/data/parallel_text.h"

#include "engine/error.h"

namespace vkf::model {

ParallelTextReader::ParallelTextReader(const CorpusFiles& files, uint64_t max_line_bytes)
    : files_(files) {
  const LineReaderOptions options{.max_line_bytes = max_line_bytes};
  source_ = std::make_unique<LineReader>(files.source, options);
  if (!files.is_tsv()) target_ = std::make_unique<LineReader>(files.target, options);
}

bool ParallelTextReader::next(RawPair& pair) {
  std::string_view line;
  bool has_source = source_->next(line);
  if (files_.is_tsv()) {
    if (!has_source) return false;
    pair.line = source_->line_number();
    pair.too_long = source_->too_long();
    size_t tab = line.find('\t');
    pair.well_formed = tab != std::string_view::npos && line.find('\t', tab + 1) == line.npos;
    pair.source = pair.well_formed ? line.substr(0, tab) : line;
    pair.target = pair.well_formed ? line.substr(tab + 1) : std::string_view{};
    return true;
  }
  std::string_view target;
  bool has_target = target_->next(target);
  if (has_source != has_target)
    has_source ? throw_mismatch(*source_, *target_) : throw_mismatch(*target_, *source_);
  if (!has_source) return false;
  pair = {.source = line,
          .target = target,
          .line = source_->line_number(),
          .well_formed = true,
          .too_long = source_->too_long() || target_->too_long()};
  return true;
}

void ParallelTextReader::throw_mismatch(LineReader& longer, LineReader& shorter) {
  // Count the rest so the message gives both totals.
  std::string_view line;
  while (longer.next(line)) {
  }
  throw Error("parallel corpus files differ in length: " + longer.path() + " has " +
              std::to_string(longer.line_number()) + " lines, " + shorter.path() + " has " +
              std::to_string(shorter.line_number()));
}

}  // namespace vkf::model
