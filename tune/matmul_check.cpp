#include "tune/matmul_check.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <vector>

#include "engine/error.h"
#include "engine/ops/matmul.h"
#include "reference/matmul.h"
#include "reference/stored.h"

namespace vkf::tune {
namespace {

// Tolerances relative to the sum of the magnitudes of each output's terms, as the shader tests
// use: fp32 accumulation; for f16 storage also one fp16 rounding of the stored result.
constexpr double k_rtol_f32 = 1e-4, k_rtol_f16 = 2e-3;
constexpr uint32_t k_poison_bits = 0x7fc0dead;  // a NaN: an unwritten output cannot pass
constexpr uint16_t k_poison_half = 0x7e00;      // the same in fp16
constexpr uint32_t k_wrong_bits = 0x42c80000;   // 100.0f: what the sabotage hook writes

struct Shape {
  uint32_t m, n, k, batch;
  float beta;
  ops::Epilogue epilogue;
  uint32_t split_k = 0;  // > 1: split into that many slices, through a workspace
};

std::string check_shape(Device& dev, const ops::MatmulConfig& cfg, const ops::MatmulProblem& p,
                        const Shape& s, bool sabotage) {
  const DType t = p.dtype;
  std::mt19937 rng(s.m * 131 + s.n * 7 + s.k);
  const uint64_t a_elems = uint64_t(s.m) * s.k, b_elems = uint64_t(s.k) * s.n,
                 c_elems = uint64_t(s.m) * s.n;
  const std::vector<float> a = ref::random_stored(rng, a_elems * s.batch, t),
                           b = ref::random_stored(rng, b_elems * s.batch, t),
                           bias = ref::random_stored(rng, s.n, t);
  std::vector<float> c = ref::random_stored(rng, c_elems * s.batch, t);
  const uint32_t es = dtype_bytes(t);
  Buffer ab = dev.allocate(a.size() * es, "tuner check A"),
         bb = dev.allocate(b.size() * es, "tuner check B"),
         cb = dev.allocate(c.size() * es, "tuner check C"),
         biasb = dev.allocate(bias.size() * es, "tuner check bias");
  ref::upload_stored(dev, ab, a, t);
  ref::upload_stored(dev, bb, b, t);
  ref::upload_stored(dev, biasb, bias, t);
  if (s.beta != 0.0f) {
    ref::upload_stored(dev, cb, c, t);
  } else {
    if (t == DType::f32)
      dev.upload(cb, std::vector<uint32_t>(c.size(), k_poison_bits));
    else
      dev.upload(cb, std::vector<uint16_t>(c.size(), k_poison_half));
  }
  ops::MatmulArgs args;
  args.a = ab;
  args.b = bb;
  args.c = cb;
  args.bias = biasb;
  args.m = s.m, args.n = s.n, args.k = s.k, args.batch = s.batch;
  args.trans_a = p.trans_a;
  args.trans_b = p.trans_b;
  args.beta = s.beta;
  args.epilogue = s.epilogue;
  args.dtype = t;
  args.config = &cfg;
  Buffer workspace;
  if (s.split_k > 1) {
    args.split_k = s.split_k;
    workspace =
        dev.allocate(ops::matmul_split_k(dev, args, true).workspace_bytes, "tuner check workspace");
    args.workspace = workspace;
  }
  try {
    Recorder rec(dev);
    ops::matmul(dev, rec, args);
    if (sabotage) rec.fill(cb.ref().slice(0, 4), k_wrong_bits);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  const std::vector<float> got = ref::download_stored(dev, cb, c.size(), t);

  ref::Gemm g;
  g.m = s.m, g.n = s.n, g.k = s.k, g.batch = s.batch;
  g.trans_a = p.trans_a, g.trans_b = p.trans_b;
  g.lda = p.trans_a ? s.m : s.k;
  g.ldb = p.trans_b ? s.k : s.n;
  g.ldc = s.n;
  g.stride_a = a_elems, g.stride_b = b_elems, g.stride_c = c_elems;
  g.beta = s.beta;
  g.epilogue = int(s.epilogue);
  if (s.beta == 0.0f) std::fill(c.begin(), c.end(), 0.0f);
  const ref::GemmResult want = ref::matmul(g, a, b, c, bias, {});
  const double rtol = t == DType::f32 ? k_rtol_f32 : k_rtol_f16;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want.c[i]);
    if (!(err <= rtol * want.scale[i] + 1e-6)) {  // NaN fails too
      std::ostringstream why;
      why << "wrong at " << s.m << "x" << s.n << "x" << s.k << " batch " << s.batch << ", element "
          << i << ": got " << got[i] << ", want " << want.c[i];
      return why.str();
    }
  }
  return "";
}

}  // namespace

std::string check_matmul(Device& dev, const ops::MatmulConfig& candidate,
                         const ops::MatmulProblem& p, const Sabotage& sabotage) {
  const bool wrong = sabotage && sabotage(candidate.describe());
  std::vector<Shape> shapes{{37, 45, 29, 2, 0.0f, ops::Epilogue::none},
                            {36, 68, 44, 1, 0.5f, ops::Epilogue::bias}};
  // Where the problem has a split-k workspace and the candidate may split, its split too:
  // three slices of whole 256-byte runs, the last shorter, with beta and the epilogue (the
  // reduce's). matmul_split_k may throw on it: the check then says the op refused it.
  if (p.workspace && candidate.split_k.value_or(2) > 1 && ops::matmul_kernel_splits(candidate)) {
    const uint32_t granule = 256 / dtype_bytes(p.dtype);
    shapes.push_back({37, 45, 5 * granule + 29, 1, 0.5f, ops::Epilogue::bias, 3});
  }
  try {
    for (const Shape& s : shapes)
      if (std::string why = check_shape(dev, candidate, p, s, wrong); !why.empty()) return why;
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }
  return "";
}

}  // namespace vkf::tune
