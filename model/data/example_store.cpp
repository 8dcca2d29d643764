#include "model/data/example_store.h"

namespace vkf::model {

void ExampleStore::add(std::span<const int32_t> source, std::span<const int32_t> target,
                       int64_t line) {
  src_ids_.insert(src_ids_.end(), source.begin(), source.end());
  tgt_ids_.insert(tgt_ids_.end(), target.begin(), target.end());
  src_offsets_.push_back(src_ids_.size());
  tgt_offsets_.push_back(tgt_ids_.size());
  lines_.push_back(line);
}

void ExampleStore::shrink_to_fit() {
  src_ids_.shrink_to_fit();
  tgt_ids_.shrink_to_fit();
  src_offsets_.shrink_to_fit();
  tgt_offsets_.shrink_to_fit();
  lines_.shrink_to_fit();
}

}  // namespace vkf::model
