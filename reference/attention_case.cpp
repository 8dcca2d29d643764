#include "reference/attention_case.h"

#include <cstring>
#include <sstream>
#include <utility>

#include "engine/error.h"
#include "engine/step_scalars.h"
#include "reference/stored.h"

namespace vkf::ref {
namespace {

size_t elements(const AttentionShape& s, int len, int d) {
  return size_t(s.batch) * s.heads * len * d;
}

std::vector<double> doubles(const std::vector<float>& v, size_t first, size_t count) {
  return {v.begin() + int64_t(first), v.begin() + int64_t(first + count)};
}

// A buffer for `count` elements of `t` in whole words, so that a recorded fill can poison it.
Buffer output(Device& dev, size_t count, DType t, const char* what) {
  return dev.allocate((count * dtype_bytes(t) + 3) / 4 * 4, what);
}

}  // namespace

std::string AttentionCase::describe() const {
  std::ostringstream d;
  d << s.batch << "x" << s.heads << " heads, " << s.len_q << "x" << s.len_k << ", d " << s.d_k
    << "/" << s.d_v << (s.causal ? ", causal" : "") << (s.key_len.empty() ? "" : ", key lengths")
    << (s.q_len.empty() ? "" : ", query lengths");
  if (s.dropout_p > 0) d << ", dropout " << s.dropout_p;
  d << ", " << dtype_name(dtype);
  return d.str();
}

AttentionInputs random_attention_inputs(const AttentionCase& c, std::mt19937& rng) {
  const AttentionShape& s = c.s;
  // A braced list runs its initializers in order: q, k, v, dO draw from rng one after another.
  return {random_stored(rng, elements(s, s.len_q, s.d_k), c.dtype, -c.qk_range, c.qk_range),
          random_stored(rng, elements(s, s.len_k, s.d_k), c.dtype, -c.qk_range, c.qk_range),
          random_stored(rng, elements(s, s.len_k, s.d_v), c.dtype),
          random_stored(rng, elements(s, s.len_q, s.d_v), c.dtype)};
}

AttentionTolerance attention_tolerance(DType t) {
  if (t == DType::f16) return {{2e-3, 2e-3}, {1e-5, 1e-5}, {4e-3, 4e-3}};
  return {{2e-5, 1e-4}, {1e-5, 1e-5}, {1e-4, 1e-3}};
}

AttentionRun::AttentionRun(Device& dev, const AttentionCase& c, AttentionInputs inputs)
    : dev_(dev), c_(c), in_(std::move(inputs)) {
  const AttentionShape& s = c_.s;
  const DType t = c_.dtype;
  const size_t nq = elements(s, s.len_q, s.d_k), nk = elements(s, s.len_k, s.d_k),
               nv = elements(s, s.len_k, s.d_v), no = elements(s, s.len_q, s.d_v),
               rows = elements(s, s.len_q, 1);
  if (in_.q.size() != nq || in_.k.size() != nk || in_.v.size() != nv || in_.d_o.size() != no)
    throw Error("attention case: the inputs do not have the shape of " + c_.describe());
  q_ = upload_stored(dev, in_.q, t, "q");
  k_ = upload_stored(dev, in_.k, t, "k");
  v_ = upload_stored(dev, in_.v, t, "v");
  d_o_ = upload_stored(dev, in_.d_o, t, "d_o");
  o_ = output(dev, no, t, "o");
  d_q_ = output(dev, nq, t, "d_q");
  d_k_ = output(dev, nk, t, "d_k");
  d_v_ = output(dev, nv, t, "d_v");
  lse_ = output(dev, rows, DType::f32, "lse");
  delta_ = output(dev, rows, DType::f32, "delta");
  key_len_ = dev.allocate(uint64_t(s.batch) * 4, "key_len");
  q_len_ = dev.allocate(uint64_t(s.batch) * 4, "q_len");
  if (!s.key_len.empty()) dev.upload(key_len_, s.key_len);
  if (!s.q_len.empty()) dev.upload(q_len_, s.q_len);
  scalars_ = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  set_dropout_stream(s.seed);
}

void AttentionRun::set_dropout_stream(uint32_t seed, uint32_t dropout_row) {
  c_.s.seed = seed;
  dropout_row_ = dropout_row;
  StepScalars st;
  st.seed = seed, st.step = c_.s.step, st.dropout_row = dropout_row;
  std::memcpy(scalars_.mapped(), &st, sizeof st);
}

ops::AttentionArgs AttentionRun::forward_args(const ops::AttentionTiles& tiles) const {
  const AttentionShape& s = c_.s;
  ops::AttentionArgs a;
  a.batch = uint32_t(s.batch), a.heads = uint32_t(s.heads);
  a.len_q = uint32_t(s.len_q), a.len_k = uint32_t(s.len_k);
  a.d_k = uint32_t(s.d_k), a.d_v = uint32_t(s.d_v), a.dtype = c_.dtype;
  a.q = q_, a.k = k_, a.v = v_, a.o = o_, a.lse = lse_;
  if (!s.key_len.empty()) a.key_len = key_len_;
  if (!s.q_len.empty()) a.q_len = q_len_;
  a.causal = s.causal, a.scale = float(s.scale);
  a.dropout_p = s.dropout_p, a.dropout_tensor = s.tensor_id, a.scalars = scalars_;
  a.tiles = tiles;
  return a;
}

ops::AttentionBackwardArgs AttentionRun::backward_args(const ops::AttentionTiles& tiles) const {
  ops::AttentionBackwardArgs g;
  g.fwd = forward_args(tiles);
  g.d_o = d_o_, g.d_q = d_q_, g.d_k = d_k_, g.d_v = d_v_, g.delta = delta_;
  g.tiles_kv = tiles, g.tiles_q = tiles;
  return g;
}

void AttentionRun::poison(Recorder& rec) const {
  for (const Buffer* b : {&o_, &d_q_, &d_k_, &d_v_}) rec.fill(*b, poison_word(c_.dtype));
  for (const Buffer* b : {&lse_, &delta_}) rec.fill(*b, k_poison_bits);
}

void AttentionRun::corrupt(Recorder& rec, ops::AttentionKernel kernel) const {
  const Buffer& out = kernel == ops::AttentionKernel::forward       ? o_
                      : kernel == ops::AttentionKernel::backward_kv ? d_k_
                                                                    : d_q_;
  rec.fill(out.ref().slice(0, 4), k_wrong_bits);
}

std::vector<float> AttentionRun::o() const {
  return download_stored(dev_, o_, in_.d_o.size(), c_.dtype);
}
std::vector<float> AttentionRun::lse() const {
  return dev_.download<float>(lse_, elements(c_.s, c_.s.len_q, 1));
}
std::vector<float> AttentionRun::d_q() const {
  return download_stored(dev_, d_q_, in_.q.size(), c_.dtype);
}
std::vector<float> AttentionRun::d_k() const {
  return download_stored(dev_, d_k_, in_.k.size(), c_.dtype);
}
std::vector<float> AttentionRun::d_v() const {
  return download_stored(dev_, d_v_, in_.v.size(), c_.dtype);
}

std::vector<Comparison> AttentionRun::compare_forward(const AttentionTolerance& tol,
                                                      const std::vector<uint32_t>& heads) const {
  return compare(false, tol, heads);
}
std::vector<Comparison> AttentionRun::compare_backward(const AttentionTolerance& tol,
                                                       const std::vector<uint32_t>& heads) const {
  return compare(true, tol, heads);
}

std::vector<Comparison> AttentionRun::compare(bool backward, const AttentionTolerance& tol,
                                              const std::vector<uint32_t>& heads) const {
  const AttentionShape& s = c_.s;
  if (s.dropout_p > 0 && dropout_row_ != 0)
    throw Error("attention case: no reference for the mask of a batch share (dropout_row " +
                std::to_string(dropout_row_) + ")");
  std::vector<Comparison> out;
  std::vector<float> got[3];
  if (backward) {
    out = {Comparison("dQ"), Comparison("dK"), Comparison("dV")};
    got[0] = d_q(), got[1] = d_k(), got[2] = d_v();
  } else {
    out = {Comparison("O"), Comparison("log-sum-exp")};
    got[0] = o(), got[1] = lse();
  }
  // Compares the heads of `one` (the whole batch, or one head) that start at head `bh`.
  auto check = [&](const AttentionShape& one, size_t bh) {
    const size_t nq = elements(one, one.len_q, one.d_k), nk = elements(one, one.len_k, one.d_k),
                 nv = elements(one, one.len_k, one.d_v), no = elements(one, one.len_q, one.d_v);
    const size_t q_at = bh * one.len_q * one.d_k, k_at = bh * one.len_k * one.d_k,
                 v_at = bh * one.len_k * one.d_v, o_at = bh * one.len_q * one.d_v,
                 row_at = bh * one.len_q;
    const std::vector<double> q = doubles(in_.q, q_at, nq), k = doubles(in_.k, k_at, nk),
                              v = doubles(in_.v, v_at, nv);
    if (!backward) {
      const AttentionForward f = attention_forward(one, q, k, v);
      for (size_t i = 0; i < no; ++i) out[0].add(got[0][o_at + i], f.o[i], f.o[i], tol.o);
      for (size_t i = 0; i < f.lse.size(); ++i)
        out[1].add(got[1][row_at + i], f.lse[i], f.lse[i], tol.lse);
      return;
    }
    const AttentionGrads g = attention_backward(one, q, k, v, doubles(in_.d_o, o_at, no));
    for (size_t i = 0; i < nq; ++i) out[0].add(got[0][q_at + i], g.d_q[i], g.d_q[i], tol.grads);
    for (size_t i = 0; i < nk; ++i) out[1].add(got[1][k_at + i], g.d_k[i], g.d_k[i], tol.grads);
    for (size_t i = 0; i < nv; ++i) out[2].add(got[2][v_at + i], g.d_v[i], g.d_v[i], tol.grads);
  };
  if (heads.empty()) {
    check(s, 0);
    return out;
  }
  for (uint32_t bh : heads) {
    if (bh >= uint32_t(s.batch * s.heads))
      throw Error("attention case: head " + std::to_string(bh) + " of " + c_.describe());
    if (s.dropout_p > 0 && bh != 0)
      throw Error("attention case: with dropout only head 0 has a one-head reference");
    AttentionShape one = s;
    one.batch = 1, one.heads = 1;
    const size_t b = bh / uint32_t(s.heads);
    if (!s.key_len.empty()) one.key_len = {s.key_len[b]};
    if (!s.q_len.empty()) one.q_len = {s.q_len[b]};
    check(one, bh);
  }
  return out;
}

}  // namespace vkf::ref
