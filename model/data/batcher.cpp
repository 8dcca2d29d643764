#include "model/data/batcher.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "engine/error.h"

namespace vkf::model {
namespace {

// Shuffling is ours, not std::shuffle: the standard leaves std::shuffle's and the distributions'
// algorithms to the library, and batch order must be identical wherever a run resumes.
// SplitMix64 (Steele, Lea & Flood 2014) is small, fast and passes BigCrush.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) without modulo bias: reject the top partial range.
  uint64_t below(uint64_t n) {
    uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (true) {
      uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }

 private:
  uint64_t state_;
};

template <typename T>
void shuffle(std::vector<T>& items, SplitMix64& rng) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.below(i)]);
}

// One generator per (seed, epoch), decorrelated by hashing both.
SplitMix64 epoch_rng(uint64_t seed, uint64_t epoch) {
  SplitMix64 mix(seed);
  uint64_t a = mix.next();
  SplitMix64 mix_epoch(epoch ^ 0x6a09e667f3bcc909ull);
  return SplitMix64(a ^ mix_epoch.next());
}

int round_up(int x, int multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

}  // namespace

std::vector<int> default_buckets(int max_len) {
  std::vector<int> buckets;
  for (int len = 8; len < max_len; len = len < 64 ? len + 8 : round_up(len + len / 4, 8))
    buckets.push_back(len);
  buckets.push_back(max_len);
  return buckets;
}

void BatcherOptions::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("invalid batcher options: " + what);
  };
  need(max_tokens > 0, "max_tokens must be positive");
  need(batch_multiple >= 1, "batch_multiple must be >= 1");
  need(max_batch_size >= 0, "max_batch_size must be >= 0");
  if (buckets.empty()) {
    need(max_len >= 2, "max_len must be >= 2");
  } else {
    need(buckets.front() >= 2, "bucket lengths must be >= 2");
    need(std::is_sorted(buckets.begin(), buckets.end()) &&
             std::adjacent_find(buckets.begin(), buckets.end()) == buckets.end(),
         "bucket lengths must be strictly ascending");
  }
  int longest = buckets.empty() ? max_len : buckets.back();
  need(max_tokens >= longest, "max_tokens (" + std::to_string(max_tokens) +
                                  ") cannot hold one row of the longest bucket (" +
                                  std::to_string(longest) + " tokens)");
}

Batcher::Batcher(const ExampleStore& store, SpecialIds ids, BatcherOptions options)
    : store_(store), ids_(ids), options_(std::move(options)) {
  options_.validate();
  buckets_ = options_.buckets.empty() ? default_buckets(options_.max_len) : options_.buckets;
  if (store.size() > UINT32_MAX)
    throw Error("corpus of " + std::to_string(store.size()) + " examples is too large to batch");

  // Group in store order, so each group's list is deterministic before any shuffling.
  std::map<std::pair<int, int>, std::vector<uint32_t>> by_shape;
  for (size_t i = 0; i < store.size(); ++i) {
    // Both sides are pieces + 1: source + EOS; decoder input BOS + pieces, target pieces + EOS.
    int src_len = bucket_for(store.source(i).size() + 1, i, "source");
    int tgt_len = bucket_for(store.target(i).size() + 1, i, "target");
    if (options_.shared_length) src_len = tgt_len = std::max(src_len, tgt_len);
    by_shape[{src_len, tgt_len}].push_back(uint32_t(i));
  }
  for (auto& [lengths, examples] : by_shape) {
    auto [src_len, tgt_len] = lengths;
    int64_t rows = options_.max_tokens / std::max(src_len, tgt_len);
    if (options_.max_batch_size > 0) rows = std::min<int64_t>(rows, options_.max_batch_size);
    if (rows >= options_.batch_multiple) rows -= rows % options_.batch_multiple;
    int batch_size = int(std::min<int64_t>(rows, INT32_MAX));
    batches_per_epoch_ += (examples.size() + size_t(batch_size) - 1) / size_t(batch_size);
    groups_.push_back({src_len, tgt_len, batch_size, std::move(examples)});
  }
}

int Batcher::bucket_for(size_t tokens, size_t example, const char* side) const {
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), int64_t(tokens),
                             [](int bucket, int64_t n) { return bucket < n; });
  if (it == buckets_.end())
    throw Error("example at line " + std::to_string(store_.line(example)) + " has " +
                std::to_string(tokens) + " " + side + " tokens, more than the largest bucket (" +
                std::to_string(buckets_.back()) + "); read the corpus with the batcher's max_len");
  return *it;
}

EpochPlan Batcher::plan(uint64_t epoch) const {
  SplitMix64 rng = epoch_rng(options_.seed, epoch);
  EpochPlan plan;
  plan.examples_.reserve(store_.size());
  plan.batches_.reserve(batches_per_epoch_);
  std::vector<uint32_t> order;
  for (const Group& group : groups_) {
    order = group.examples;
    if (options_.shuffle) shuffle(order, rng);
    for (size_t first = 0; first < order.size(); first += size_t(group.batch_size)) {
      size_t rows = std::min(order.size() - first, size_t(group.batch_size));
      plan.batches_.push_back({{int(rows), group.src_len, group.tgt_len}, plan.examples_.size()});
      plan.examples_.insert(plan.examples_.end(), order.begin() + std::ptrdiff_t(first),
                            order.begin() + std::ptrdiff_t(first + rows));
    }
  }
  // Mix the buckets so that consecutive steps see different lengths.
  if (options_.shuffle) shuffle(plan.batches_, rng);
  return plan;
}

Batch Batcher::make_batch(const EpochPlan& plan, size_t index) const {
  if (index >= plan.size())
    throw Error("batch " + std::to_string(index) + " is past the end of an epoch of " +
                std::to_string(plan.size()) + " batches");
  BatchShape shape = plan.shape(index);
  Batch b;
  b.batch_size = shape.batch_size;
  b.src_len = shape.src_len;
  b.tgt_len = shape.tgt_len;
  auto rows = size_t(shape.batch_size);
  b.src.assign(rows * size_t(shape.src_len), ids_.pad);
  b.tgt_in.assign(rows * size_t(shape.tgt_len), ids_.pad);
  b.tgt_out.assign(rows * size_t(shape.tgt_len), ids_.pad);
  b.src_lengths.resize(rows);
  b.tgt_lengths.resize(rows);
  auto examples = plan.examples(index);
  b.examples.assign(examples.begin(), examples.end());
  for (size_t r = 0; r < rows; ++r) {
    auto source = store_.source(examples[r]);
    auto target = store_.target(examples[r]);
    int32_t* src = b.src.data() + r * size_t(shape.src_len);
    int32_t* tgt_in = b.tgt_in.data() + r * size_t(shape.tgt_len);
    int32_t* tgt_out = b.tgt_out.data() + r * size_t(shape.tgt_len);
    std::copy(source.begin(), source.end(), src);
    src[source.size()] = ids_.eos;
    tgt_in[0] = ids_.bos;
    std::copy(target.begin(), target.end(), tgt_in + 1);
    std::copy(target.begin(), target.end(), tgt_out);
    tgt_out[target.size()] = ids_.eos;
    b.src_lengths[r] = int32_t(source.size() + 1);
    b.tgt_lengths[r] = int32_t(target.size() + 1);
    b.src_tokens += b.src_lengths[r];
    b.tgt_tokens += b.tgt_lengths[r];
  }
  return b;
}

std::vector<BatchShape> Batcher::shapes() const {
  std::vector<BatchShape> shapes;
  for (const Group& group : groups_) {
    size_t full = group.examples.size() / size_t(group.batch_size);
    size_t rest = group.examples.size() % size_t(group.batch_size);
    if (full > 0) shapes.push_back({group.batch_size, group.src_len, group.tgt_len});
    if (rest > 0) shapes.push_back({int(rest), group.src_len, group.tgt_len});
  }
  return shapes;
}

BatchStream::BatchStream(const Batcher& batcher, BatchPosition start)
    : batcher_(batcher), position_(start) {
  if (start.batch > batcher.batches_per_epoch())
    throw Error("cannot resume at batch " + std::to_string(start.batch) + " of epoch " +
                std::to_string(start.epoch) + ": an epoch has " +
                std::to_string(batcher.batches_per_epoch()) + " batches");
  if (batcher.batches_per_epoch() == 0) throw Error("cannot stream batches from an empty corpus");
  if (position_.batch == batcher.batches_per_epoch()) position_ = {position_.epoch + 1, 0};
}

Batch BatchStream::next() {
  if (planned_epoch_ != position_.epoch) {
    plan_ = batcher_.plan(position_.epoch);
    planned_epoch_ = position_.epoch;
  }
  Batch batch = batcher_.make_batch(plan_, position_.batch);
  if (++position_.batch == batcher_.batches_per_epoch()) position_ = {position_.epoch + 1, 0};
  return batch;
}

}  // namespace vkf::model
