#pragma once
// One matmul problem as every caller that checks ops::matmul against its reference poses it: the
// shader tests (tests/shaders/test_matmul.cpp), `vkf bench`'s matmul rows
// (apps/vkf/bench/rows_matmul.cpp) and the tuner's correctness guard (tune/matmul_family.cpp).
// Written once so that they cannot drift apart: a MatmulRun draws the case's inputs as its
// storage type holds them, allocates and uploads the buffers (C poisoned where beta is 0; guard
// zones, row padding and batch gaps poisoned always), records ops::matmul, and compares C with
// reference/matmul's double-precision result: each written element within atol + rtol * (the sum
// of the magnitudes of its terms), every other element bit for bit the poison it was.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/ops/matmul.h"
#include "reference/comparison.h"

namespace vkf::ref {

struct MatmulCase {
  uint32_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  uint32_t pad = 0;  // extra elements per row of A, B and C, and between C's batch items
  float alpha = 1.0f, beta = 0.0f;
  ops::Epilogue epilogue = ops::Epilogue::none;
  bool broadcast_b = false;  // stride_b = 0: one B for every batch item
  // 1: never split; n > 1: at most n k slices (MatmulArgs::split_k), and the split must happen;
  // 0: as matmul_split_k chooses with room for any workspace. The workspace starts poisoned.
  uint32_t split_k = 1;
  DType dtype = DType::f32;
  const ops::MatmulConfig* config = nullptr;  // a forced row; nullptr: the engine's choice
  bool emulate_coopmat = false;               // MatmulArgs::emulate_coopmat
  std::optional<bool> texel_views;            // MatmulArgs::texel_views
  // Poisoned elements before and after C that must come back unchanged; at least this many,
  // grown to a whole multiple of the device's storage-buffer offset alignment.
  uint32_t guard = 0;
  // > 0: A and C are cut into blocks of this many rows, one ops::matmul each (the bench's shapes
  // whose C exceeds one storage-buffer binding). Only packed, batch 1, without trans_a, guard or
  // split. 0: one block.
  uint32_t block_rows = 0;

  // "m=37 n=45 k=29 batch=2 ta=0 ..." for failure messages.
  std::string describe() const;
};

// The tolerance relative to the sum of |terms| that the tests and the tuner hold every matmul to:
// fp32 accumulation (over k up to a few thousand); for f16 storage also one fp16 rounding of
// the stored result (2^-11 relative), the inputs being exactly representable.
Tolerance matmul_tolerance(DType t);

class MatmulRun {
 public:
  // Draws the inputs from rng uniform in [-1, 1) as stored in the case's type (A, B, then the
  // bias, R and C where the case reads them), and allocates, uploads and poisons the buffers.
  MatmulRun(Device& dev, const MatmulCase& c, std::mt19937& rng);

  const MatmulCase& spec() const { return c_; }
  // How the recorded matmul splits k (slices == 1: not at all).
  const ops::SplitK& split() const { return split_; }
  // Records the case's matmul (one per block) into rec. `corrupt` != 0: then fills the first 4
  // bytes of C with those bits, as a wrong kernel would have written them (the test hooks).
  void record(Recorder& rec, uint32_t corrupt = 0) const;

  // Downloads C and compares every element of it (and the guard zones).
  Comparison compare(const Tolerance& tol) const;
  // Downloads and compares only `rows` of C, every column (batch 1): for shapes whose full
  // reference costs too long.
  Comparison compare_rows(const std::vector<uint32_t>& rows, const Tolerance& tol) const;

 private:
  struct Block {
    uint32_t m0 = 0, rows = 0;
    Buffer a, c;
    BufferRef c_range;  // C within its buffer (after the guard zone)
  };
  ops::MatmulArgs args(const Block& blk) const;

  Device& dev_;
  MatmulCase c_;
  uint32_t lda_ = 0, ldb_ = 0, ldc_ = 0;
  uint64_t stride_a_ = 0, stride_b_ = 0, stride_c_ = 0, c_elems_ = 0;
  std::vector<float> a_, b_, bias_, r_, c0_;  // host inputs as stored; c0_ empty where beta is 0
  std::vector<Block> blocks_;
  Buffer b_buf_, bias_buf_, r_buf_, workspace_;
  ops::SplitK split_;
};

}  // namespace vkf::ref
