#pragma once
// Top-k per row (beam search over the vocabulary): the k largest values of each row of
// [rows, n] and their indices, best first, ties broken by the lower index. Each chunk of
// WG * E entries keeps its k best (k rounds of a workgroup argmax); the candidates are merged
// the same way until one chunk is left. Kernels: shaders/topk.comp, topk_thread_max.comp.
// With dtype f16 the input values are fp16 (devices with 16-bit storage); the outputs, the
// intermediate candidates and the comparisons stay fp32, which hold every fp16 value exactly.
#include <cstdint>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/tensor.h"

namespace vkf::ops {

struct TopKConfig {
  // A round of the argmax costs ~workgroup * log2(workgroup): small groups with many entries
  // each are cheapest (on lavapipe and GPUs alike); chunk = workgroup * per_thread entries of
  // 8 bytes of shared memory.
  uint32_t workgroup_size = 64;  // power of two, 32..1024
  uint32_t per_thread = 32;      // entries per invocation, 1..32
  // Rows longer than a chunk first find a lower bound of the k-th value (the k-th largest of the
  // per-invocation maxima) and stop each chunk below it: most chunks then run a few rounds, not k.
  bool prune = true;
};

struct TopKArgs {
  DType dtype = DType::f32;  // storage of values: f32 or f16
  BufferRef values;          // [rows, n] of dtype
  BufferRef out_values;      // [rows, k] f32
  BufferRef out_indices;     // [rows, k] u32, column indices into values
  BufferRef scratch;         // topk_scratch_bytes(...) bytes (unused when n fits one chunk)
  uint32_t rows = 0;
  uint32_t n = 0;
  uint32_t k = 0;  // 1..n, and 2 * k <= chunk
  TopKConfig config;
};
uint64_t topk_scratch_bytes(uint32_t rows, uint32_t n, uint32_t k, const TopKConfig& config = {});
void topk(Device& dev, Recorder& rec, const TopKArgs& a);

}  // namespace vkf::ops
