#pragma once
// ExampleStore: encoded parallel examples held compactly for a large corpus: every source piece in
// one flat int32 vector, every target piece in another, and offsets per example (no text, no
// per-example allocation). Pieces only: bos/eos are added by the batcher (docs/design.md).
#include <cstdint>
#include <span>
#include <vector>

namespace vkf::model {

class ExampleStore {
 public:
  // `line` is the 1-based line of the pair in its input, for messages and for translation's
  // restore-to-input-order.
  void add(std::span<const int32_t> source, std::span<const int32_t> target, int64_t line);

  size_t size() const { return lines_.size(); }
  bool empty() const { return lines_.empty(); }
  std::span<const int32_t> source(size_t i) const {
    return {src_ids_.data() + src_offsets_[i], src_offsets_[i + 1] - src_offsets_[i]};
  }
  std::span<const int32_t> target(size_t i) const {
    return {tgt_ids_.data() + tgt_offsets_[i], tgt_offsets_[i + 1] - tgt_offsets_[i]};
  }
  int64_t line(size_t i) const { return lines_[i]; }
  // Pieces over all examples (without bos/eos).
  size_t source_pieces() const { return src_ids_.size(); }
  size_t target_pieces() const { return tgt_ids_.size(); }
  // Releases the growth slack once the corpus is read.
  void shrink_to_fit();

 private:
  std::vector<int32_t> src_ids_, tgt_ids_;
  std::vector<size_t> src_offsets_{0}, tgt_offsets_{0};  // example i is [offsets[i], offsets[i+1])
  std::vector<int64_t> lines_;
};

}  // namespace vkf::model
