#include "reference/matmul_case.h"

#include <algorithm>
#include <bit>

#include "engine/error.h"
#include "reference/matmul.h"
#include "reference/stored.h"

namespace vkf::ref {
namespace {

// The poison as a host float: copied, never computed with, so its bits reach the buffer as they
// are (to_half maps this NaN to k_poison_half).
const float k_poison_float = std::bit_cast<float>(k_poison_bits);

// v with poison up to a whole 4-element texel: the texel views read A and B whole, and the
// extra elements are never used.
std::vector<float> texel_padded(std::vector<float> v) {
  v.resize((v.size() + 3) / 4 * 4, k_poison_float);
  return v;
}

// The case with its guard zone grown to a whole multiple of the device's storage-buffer offset
// alignment (up to 256 bytes), so that C's range, which starts after it, may be bound: the zone
// still proves that nothing is written before or after C.
MatmulCase aligned_guard(const Device& dev, MatmulCase c) {
  if (c.guard == 0) return c;
  const uint64_t es = dtype_bytes(c.dtype);
  const uint64_t align = std::max<uint64_t>(dev.info().min_storage_offset_alignment, es);
  c.guard = uint32_t((c.guard * es + align - 1) / align * align / es);
  return c;
}

}  // namespace

std::string MatmulCase::describe() const {
  auto s = [](auto v) { return std::to_string(v); };
  return (config ? config->name + " " : std::string()) + dtype_name(dtype) + " m=" + s(m) +
         " n=" + s(n) + " k=" + s(k) + " batch=" + s(batch) + " ta=" + s(int(trans_a)) +
         " tb=" + s(int(trans_b)) + " pad=" + s(pad) + " alpha=" + s(alpha) + " beta=" + s(beta) +
         " epilogue=" + s(int(epilogue)) + (broadcast_b ? " broadcast_b" : "") +
         (split_k != 1 ? " split_k=" + s(split_k) : "") +
         (emulate_coopmat ? " (emulated fragments)" : "") +
         (texel_views ? (*texel_views ? " (texel views)" : " (storage buffers)") : "");
}

Tolerance matmul_tolerance(DType t) {
  return t == DType::f32 ? Tolerance{1e-7, 1e-4} : Tolerance{1e-6, 2e-3};
}

MatmulRun::MatmulRun(Device& dev, const MatmulCase& asked, std::mt19937& rng)
    : dev_(dev), c_(aligned_guard(dev, asked)) {
  const MatmulCase& c = c_;
  const DType t = c.dtype;
  const uint64_t es = dtype_bytes(t);
  if (c.block_rows && (c.batch != 1 || c.pad || c.trans_a || c.guard || c.split_k != 1))
    throw Error("matmul case: row blocks are for packed, unbatched A B without a split");
  lda_ = (c.trans_a ? c.m : c.k) + c.pad;
  ldb_ = (c.trans_b ? c.k : c.n) + c.pad;
  ldc_ = c.n + c.pad;
  stride_a_ = uint64_t(c.trans_a ? c.k : c.m) * lda_;
  const uint64_t b_span = uint64_t(c.trans_b ? c.n : c.k) * ldb_;
  stride_b_ = c.broadcast_b ? 0 : b_span;
  stride_c_ = uint64_t(c.m) * ldc_ + c.pad;  // a gap between batch items of C
  c_elems_ = stride_c_ * c.batch;

  a_ = random_stored(rng, stride_a_ * c.batch, t);
  b_ = random_stored(rng, c.broadcast_b ? b_span : stride_b_ * c.batch, t);
  if (c.epilogue == ops::Epilogue::bias || c.epilogue == ops::Epilogue::bias_relu)
    bias_ = random_stored(rng, c.n, t);
  if (c.epilogue == ops::Epilogue::residual) r_ = random_stored(rng, c_elems_, t);
  if (c.beta != 0.0f) c0_ = random_stored(rng, c_elems_, t);

  b_buf_ = upload_stored(dev, texel_padded(b_), t, "B");
  if (!bias_.empty()) bias_buf_ = upload_stored(dev, bias_, t, "bias");
  if (!r_.empty()) r_buf_ = upload_stored(dev, r_, t, "R");
  const uint32_t rows = c.block_rows ? c.block_rows : c.m;
  Recorder poison_rec(dev);
  for (uint32_t m0 = 0; m0 < c.m; m0 += rows) {
    Block blk;
    blk.m0 = m0;
    blk.rows = std::min(rows, c.m - m0);
    const uint64_t a_elems = c.block_rows ? uint64_t(blk.rows) * lda_ : a_.size();
    blk.a = upload_stored(dev,
                          texel_padded({a_.begin() + int64_t(m0) * lda_,
                                        a_.begin() + int64_t(m0) * lda_ + int64_t(a_elems)}),
                          t, "A");
    const uint64_t c_elems = c.block_rows ? uint64_t(blk.rows) * ldc_ : c_elems_;
    const uint64_t c_bytes = (c_elems + 2 * c.guard) * es;
    blk.c = dev.allocate((c_bytes + 3) / 4 * 4, "C");  // whole words for the poison fill
    blk.c_range = BufferRef(blk.c).slice(c.guard * es, c_elems * es);
    if (c.beta == 0.0f) {
      poison_rec.fill(blk.c, poison_word(t));
    } else {
      // Beta reads C: its [m, n] grid holds c0_, everything around it the poison.
      std::vector<float> full(c_elems + 2 * c.guard, k_poison_float);
      for (uint32_t z = 0; z < c.batch; ++z)
        for (uint32_t i = 0; i < c.m; ++i)
          for (uint32_t j = 0; j < c.n; ++j) {
            const uint64_t at = z * stride_c_ + uint64_t(i) * ldc_ + j;
            full[c.guard + at] = c0_[at];
          }
      upload_stored(dev, BufferRef(blk.c).slice(0, full.size() * es), full, t);
    }
    blocks_.push_back(std::move(blk));
  }

  if (c.split_k != 1) {
    ops::MatmulArgs probe = args(blocks_[0]);
    if (c.split_k > 1) probe.split_k = c.split_k;
    split_ = ops::matmul_split_k(dev, probe, true);
    if (c.split_k > 1 && split_.slices < 2)
      throw Error("matmul case: " + std::to_string(c.split_k) + " k slices asked for, not split");
  }
  if (split_.slices > 1) {
    workspace_ = dev.allocate(split_.workspace_bytes, "split-k workspace");
    poison_rec.fill(workspace_, k_poison_bits);  // fp32 partial products
  }
  poison_rec.finish().run();
}

ops::MatmulArgs MatmulRun::args(const Block& blk) const {
  ops::MatmulArgs a;
  a.a = blk.a;
  a.b = b_buf_;
  a.c = blk.c_range;
  if (!bias_.empty()) a.bias = bias_buf_;
  if (!r_.empty()) a.residual = r_buf_;
  a.m = blk.rows, a.n = c_.n, a.k = c_.k, a.batch = c_.batch;
  a.trans_a = c_.trans_a, a.trans_b = c_.trans_b;
  a.lda = lda_, a.ldb = ldb_, a.ldc = ldc_;
  a.stride_a = uint32_t(c_.block_rows ? uint64_t(blk.rows) * lda_ : stride_a_);
  a.stride_b = uint32_t(stride_b_);
  a.stride_c = uint32_t(c_.block_rows ? uint64_t(blk.rows) * ldc_ : stride_c_);
  a.alpha = c_.alpha, a.beta = c_.beta, a.epilogue = c_.epilogue;
  a.dtype = c_.dtype;
  a.config = c_.config;
  a.emulate_coopmat = c_.emulate_coopmat;
  a.texel_views = c_.texel_views;
  if (c_.split_k > 1) a.split_k = c_.split_k;
  if (workspace_.valid()) a.workspace = workspace_;
  return a;
}

void MatmulRun::record(Recorder& rec, uint32_t corrupt) const {
  for (const Block& blk : blocks_) ops::matmul(dev_, rec, args(blk));
  if (corrupt) rec.fill(blocks_[0].c_range.slice(0, 4), corrupt);
}

Comparison MatmulRun::compare(const Tolerance& tol) const {
  if (blocks_.size() != 1) throw Error("matmul case: compare the rows of a case in row blocks");
  const Block& blk = blocks_[0];
  const DType t = c_.dtype;
  const uint64_t total = c_elems_ + 2 * c_.guard;
  // The raw bits, so that the poison around the grid is checked bit for bit.
  std::vector<uint32_t> bits(total);
  std::vector<float> got(total);
  if (t == DType::f32) {
    bits = dev_.download<uint32_t>(blk.c, total);
    for (uint64_t e = 0; e < total; ++e) got[e] = std::bit_cast<float>(bits[e]);
  } else {
    const std::vector<uint16_t> halves = dev_.download<uint16_t>(blk.c, total);
    for (uint64_t e = 0; e < total; ++e) bits[e] = halves[e], got[e] = from_half(halves[e]);
  }
  const uint32_t poison = t == DType::f32 ? k_poison_bits : k_poison_half;

  Gemm g;
  g.m = c_.m, g.n = c_.n, g.k = c_.k, g.batch = c_.batch;
  g.trans_a = c_.trans_a, g.trans_b = c_.trans_b;
  g.lda = lda_, g.ldb = ldb_, g.ldc = ldc_;
  g.stride_a = stride_a_, g.stride_b = stride_b_, g.stride_c = stride_c_;
  g.alpha = c_.alpha, g.beta = c_.beta, g.epilogue = int(c_.epilogue);
  const GemmResult want =
      matmul(g, a_, b_, c0_.empty() ? std::vector<float>(c_elems_, 0.0f) : c0_, bias_, r_);

  Comparison cmp("C");
  for (uint64_t e = 0; e < total; ++e) {
    const uint64_t p = e - c_.guard;  // wraps for the leading guard: out of the grid
    const uint64_t q = p % stride_c_;
    if (e >= c_.guard && p < c_elems_ && q / ldc_ < c_.m && q % ldc_ < c_.n)
      cmp.add(got[e], want.c[p], want.scale[p], tol);
    else
      cmp.add_exact(bits[e] == poison, got[e], std::bit_cast<float>(k_poison_bits));
  }
  return cmp;
}

Comparison MatmulRun::compare_rows(const std::vector<uint32_t>& rows, const Tolerance& tol) const {
  if (c_.batch != 1) throw Error("matmul case: rows are compared at batch 1 only");
  const DType t = c_.dtype;
  const uint64_t es = dtype_bytes(t), k = c_.k, n = c_.n;
  // Each row's reference as a 1 x n product of that row of op(A) with B.
  Gemm g;
  g.m = 1, g.n = c_.n, g.k = c_.k;
  g.trans_b = c_.trans_b;
  g.lda = c_.k, g.ldb = ldb_, g.ldc = c_.n;
  g.stride_a = k, g.stride_b = stride_b_, g.stride_c = n;
  g.alpha = c_.alpha, g.beta = c_.beta, g.epilogue = int(c_.epilogue);
  Comparison cmp("C");
  for (uint32_t i : rows) {
    const uint32_t per = c_.block_rows ? c_.block_rows : c_.m;
    const Block& blk = blocks_[i / per];
    const uint64_t local = i - blk.m0;
    std::vector<float> a(k), c(n, 0.0f), r;
    for (uint64_t l = 0; l < k; ++l)
      a[l] = c_.trans_a ? a_[l * lda_ + i] : a_[uint64_t(i) * lda_ + l];
    const uint64_t row0 = uint64_t(i) * ldc_;
    if (!c0_.empty()) c.assign(c0_.begin() + int64_t(row0), c0_.begin() + int64_t(row0 + n));
    if (!r_.empty()) r.assign(r_.begin() + int64_t(row0), r_.begin() + int64_t(row0 + n));
    const GemmResult want = matmul(g, a, b_, c, bias_, r);
    const std::vector<float> got =
        download_stored(dev_, blk.c_range.slice(local * ldc_ * es, n * es), n, t);
    for (uint64_t j = 0; j < n; ++j) cmp.add(got[j], want.c[j], want.scale[j], tol);
  }
  return cmp;
}

}  // namespace vkf::ref
