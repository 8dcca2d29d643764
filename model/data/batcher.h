#pragma once
// Token-based batching as in fairseq and Marian: examples are grouped by length into buckets, each
// batch holds about `max_tokens` source and `max_tokens` target tokens, and rows are padded to the
// bucket length so that a handful of recorded command buffers (one per shape) serve a whole epoch
// (docs/design.md, "Record once, replay many"). Batches are shuffled per epoch from a seed and
// the order is a pure function of (seed, epoch): a run resumes at (epoch, batch) exactly.
#include <cstdint>
#include <span>
#include <vector>

#include "model/data/batch.h"
#include "model/data/example_store.h"
#include "model/data/special_ids.h"

namespace vkf::model {

// Padded lengths 8, 16, ..., 64, then steps of about a quarter (rounded up to multiples of 8) up to
// max_len, which is always the last: 8 ... 64, 80, 104, 136, 176, 224, 256 for max_len 256.
// Multiples of 8 suit the matmul tiles; the geometric tail bounds padding waste (under 25%, about
// 12% on average) while keeping the number of shapes, and so of recordings, small.
std::vector<int> default_buckets(int max_len);

struct BatcherOptions {
  // Per side, counting padding: batch_size * bucket_len <= max_tokens for source and for target.
  // The paper used 25,000.
  int64_t max_tokens = 25000;
  // Ascending padded lengths; empty: default_buckets(max_len).
  std::vector<int> buckets;
  // Longest sequence (tokens incl. BOS/EOS); used only when `buckets` is empty.
  int max_len = 256;
  // Batch sizes are rounded down to a multiple of this (when at least this large): row counts
  // that are multiples of 8 fill matmul tiles.
  int batch_multiple = 8;
  // Optional cap on rows per batch (0: none).
  int max_batch_size = 0;
  // Pad source and target of a batch to one length (fewer shapes, more padding).
  bool shared_length = false;
  // False keeps examples in store order within a bucket and buckets in length order (for
  // translation and scoring).
  bool shuffle = true;
  uint64_t seed = 1;

  // Throws vkf::Error naming the bad field.
  void validate() const;
};

struct BatchPosition {
  uint64_t epoch = 0;
  uint64_t batch = 0;  // index within the epoch
  bool operator==(const BatchPosition&) const = default;
};

struct BatchShape {
  int batch_size, src_len, tgt_len;
  bool operator==(const BatchShape&) const = default;
};

// The batches of one epoch, as example indices (the padded tensors are built on demand).
class EpochPlan {
 public:
  size_t size() const { return batches_.size(); }
  BatchShape shape(size_t batch) const { return batches_[batch].shape; }
  std::span<const uint32_t> examples(size_t batch) const {
    return {examples_.data() + batches_[batch].first, size_t(batches_[batch].shape.batch_size)};
  }

 private:
  friend class Batcher;
  struct Entry {
    BatchShape shape;
    size_t first;  // into examples_
  };
  std::vector<uint32_t> examples_;
  std::vector<Entry> batches_;
};

class Batcher {
 public:
  // Keeps a reference to `store`. Throws vkf::Error when an example is longer than the largest
  // bucket (read the corpus with the same max_len) or the options are invalid.
  Batcher(const ExampleStore& store, SpecialIds ids, BatcherOptions options);

  // Every example exactly once; the same (seed, epoch) always gives the same plan.
  EpochPlan plan(uint64_t epoch) const;
  Batch make_batch(const EpochPlan& plan, size_t batch) const;
  // Independent of the epoch: buckets are fixed, only the order within and across them changes.
  size_t batches_per_epoch() const { return batches_per_epoch_; }
  // Every shape a batch can have (full and partial batches of each bucket), for recording ahead.
  std::vector<BatchShape> shapes() const;
  const std::vector<int>& buckets() const { return buckets_; }
  const BatcherOptions& options() const { return options_; }

 private:
  struct Group {  // the examples of one (source bucket, target bucket) pair
    int src_len, tgt_len, batch_size;
    std::vector<uint32_t> examples;
  };
  int bucket_for(size_t tokens, size_t example, const char* side) const;

  const ExampleStore& store_;
  SpecialIds ids_;
  BatcherOptions options_;
  std::vector<int> buckets_;
  std::vector<Group> groups_;  // in (src_len, tgt_len) order
  size_t batches_per_epoch_ = 0;
};

// Batches in order across epochs, starting anywhere: what the training loop consumes and what a
// checkpoint records (position()) to resume.
class BatchStream {
 public:
  // Throws vkf::Error when start.batch is past the end of an epoch.
  BatchStream(const Batcher& batcher, BatchPosition start);
  Batch next();
  // The position of the batch next() returns next.
  BatchPosition position() const { return position_; }

 private:
  const Batcher& batcher_;
  BatchPosition position_;
  EpochPlan plan_;
  uint64_t planned_epoch_ = UINT64_MAX;
};

}  // namespace vkf::model
