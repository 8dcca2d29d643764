#pragma once
// Top-k per row (beam search over the vocabulary): the k largest values of each row of
// [rows, n] and their indices, best first, ties broken by the lower index. Each chunk of
// WG * E entries keeps its k best (k rounds of a workgroup argmax); the candidates are merged
// the same way until one chunk is left (TopKPath::chunks); or a subgroup per row keeps each
// lane's best in registers and merges them with subgroup operations (TopKPath::subgroup_rows).
// Kernels: shaders/topk.comp, topk_thread_max.comp, topk_rows.comp (and log_sum_exp).
// With dtype f16 the input values are fp16 (devices with 16-bit storage); the outputs, the
// intermediate candidates and the comparisons stay fp32, which hold every fp16 value exactly.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

enum class TopKPath : uint32_t {
  automatic,      // the device's tuning for the shape class (topk_choice.h), else `chunks`
  chunks,         // topk.comp: rounds of workgroup argmax over chunks, merged level by level
  subgroup_rows,  // topk_rows.comp: a subgroup per row, one pass without barriers; k <= 32 and
                  // subgroup arithmetic; workgroup_size only (per_thread and prune unused)
};

struct TopKConfig {
  // A round of the argmax costs ~workgroup * log2(workgroup): small groups with many entries
  // each are cheapest (on lavapipe and GPUs alike); chunk = workgroup * per_thread entries of
  // 8 bytes of shared memory.
  uint32_t workgroup_size = 64;  // power of two, 32..1024
  uint32_t per_thread = 32;      // entries per invocation, 1..32
  // Rows longer than a chunk first find a lower bound of the k-th value (the k-th largest of the
  // per-invocation maxima) and stop each chunk below it: most chunks then run a few rounds, not k.
  bool prune = true;
  TopKPath path = TopKPath::automatic;  // automatic: the fields above are the untuned default
};
inline constexpr uint32_t k_topk_rows_max_k = 32;

struct TopKArgs {
  DType dtype = DType::f32;  // storage of values: f32 or f16
  BufferRef values;          // [rows, n] of dtype
  BufferRef out_values;      // [rows, k] f32
  BufferRef out_indices;     // [rows, k] u32, column indices into values
  BufferRef scratch;         // topk_scratch_bytes(...) bytes (unbound where that is 0)
  uint32_t rows = 0;
  uint32_t n = 0;
  uint32_t k = 0;  // 1..n, and 2 * k <= chunk
  TopKConfig config;
  // values are logits, and out_values their log-softmax over the row: the winners (picked by
  // the logits, whose order is the log-probabilities') less the row's log-sum-exp. Beam
  // search's step, without writing a log-softmax of the whole row: subgroup_rows computes the
  // log-sum-exp in its one pass, chunks in a log_sum_exp pass first (loss.h).
  bool log_softmax = false;
};
// For a configuration whose path is given (automatic counts as chunks with its fields).
uint64_t topk_scratch_bytes(uint32_t rows, uint32_t n, uint32_t k, const TopKConfig& config = {},
                            bool log_softmax = false);
// For TopKConfig{} (automatic) on `dev`: what the device's tuning, or the default, will run.
uint64_t topk_scratch_bytes(const Device& dev, DType dtype, uint32_t rows, uint32_t n, uint32_t k,
                            bool log_softmax = false);
void topk(Device& dev, Recorder& rec, const TopKArgs& a);

}  // namespace vkf::ops
