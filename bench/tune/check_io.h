#pragma once
// What the tuner's correctness checks share (attention, LayerNorm, cross-entropy): random inputs
// exactly representable in the storage type, uploads and downloads in f32 or f16, a poisoned
// output, and the first element outside atol + rtol |want| (the shader tests' rule).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/tensor.h"

namespace vkf::tune {

// Uniform in [lo, hi), rounded to fp16 where `t` is f16 (so the references see what is stored).
std::vector<float> random_stored(std::mt19937& rng, size_t n, DType t, float lo = -1.0f,
                                 float hi = 1.0f);
void upload_stored(Device& dev, const BufferRef& b, const std::vector<float>& v, DType t);
std::vector<float> download_stored(Device& dev, const BufferRef& b, size_t n, DType t);
// Fills `count` elements of `t` at b with NaN: an output the kernel does not write cannot pass.
void poison(Device& dev, const BufferRef& b, size_t count, DType t);
// "" when every got[i] is within atol + rtol |want[i]| (a NaN never is); else "<what> wrong at
// element i: got x, want y".
std::string first_wrong(const std::string& what, const std::vector<float>& got,
                        const std::vector<double>& want, double atol, double rtol);

}  // namespace vkf::tune
