#pragma once
// Values as a kernel's storage type holds them, and the checks every caller of a kernel against
// its reference shares: the shader tests, `vkf bench`'s rows and the tuner's correctness guard.
// One place for random inputs exactly representable in the storage type, fp16 conversion,
// uploads and downloads in either type, a poisoned output, and the atol + rtol rule.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/tensor.h"

namespace vkf::ref {

// v as the device stores it in t: f16 rounds each value to nearest even, f32 keeps it.
std::vector<float> stored(std::vector<float> v, DType t);
// n values uniform in [lo, hi), as stored in t (so the reference sees what the kernel reads).
std::vector<float> random_stored(std::mt19937& rng, size_t n, DType t, float lo = -1.0f,
                                 float hi = 1.0f);
// n values uniform in [lo, hi), not rounded.
std::vector<float> uniform(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f);

// fp16 bit patterns (round to nearest even) and back.
std::vector<uint16_t> to_halves(const std::vector<float>& v);
std::vector<float> from_halves(const std::vector<uint16_t>& h);

// Uploads v in t's layout into b; the overload allocates a buffer of exactly v.size() elements
// (at least one), so that the ops' size checks are exercised.
void upload_stored(Device& dev, const BufferRef& b, const std::vector<float>& v, DType t);
Buffer upload_stored(Device& dev, const std::vector<float>& v, DType t, const char* what);
std::vector<float> download_stored(Device& dev, const BufferRef& b, size_t n, DType t);

// The poison: a NaN in either type, so that an output the kernel does not write cannot pass.
constexpr uint32_t k_poison_bits = 0x7fc0dead;
constexpr uint16_t k_poison_half = 0x7e00;
// The 32-bit word that fills a buffer of t with poison (two halves for f16), for Recorder::fill.
constexpr uint32_t poison_word(DType t) {
  return t == DType::f16 ? uint32_t{k_poison_half} * 0x10001u : k_poison_bits;
}
// Fills `count` elements of t at b with the poison.
void poison(Device& dev, const BufferRef& b, size_t count, DType t);

// What the test hooks (`vkf bench --wrong-kernel`, the tuner checks' sabotage) write over the
// start of an output right after its kernel, as a wrong kernel would: 1.3e7 as fp32, 14.6 as
// each of two fp16 halves; far outside any tolerance of the outputs it lands on.
constexpr uint32_t k_wrong_bits = 0x4B4B4B4Bu;

// Whether |got - want| <= atol + rtol * scale; a NaN never is.
inline bool within(double got, double want, double scale, double atol, double rtol) {
  const double err = got > want ? got - want : want - got;
  return err <= atol + rtol * scale;
}
// "" when every got[i] is within atol + rtol |want[i]|; else "<what> wrong at element i: got x,
// want y".
std::string first_wrong(const std::string& what, const std::vector<float>& got,
                        const std::vector<double>& want, double atol, double rtol);

}  // namespace vkf::ref
