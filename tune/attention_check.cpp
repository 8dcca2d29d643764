#include "tune/attention_check.h"

#include <random>

#include "engine/error.h"
#include "reference/attention.h"
#include "reference/stored.h"

namespace vkf::tune {
namespace {

std::vector<double> doubles(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

std::string check_attention(Device& dev, const ops::AttentionTiles& candidate,
                            const ops::AttentionProblem& p, const Sabotage& sabotage) {
  const DType t = p.dtype;
  ref::AttentionShape s;
  s.batch = 2, s.heads = 2, s.d_k = int(p.d_k), s.d_v = int(p.d_v), s.causal = p.causal;
  // Self-attention lengths where the mask is causal, cross-attention ones elsewhere.
  s.len_k = 37;
  s.len_q = p.causal ? 37 : 23;
  s.key_len = {37, 31};
  const size_t nq = size_t(s.batch) * s.heads * s.len_q * s.d_k,
               nk = size_t(s.batch) * s.heads * s.len_k * s.d_k,
               nv = size_t(s.batch) * s.heads * s.len_k * s.d_v,
               no = size_t(s.batch) * s.heads * s.len_q * s.d_v,
               rows = size_t(s.batch) * s.heads * s.len_q;
  std::mt19937 rng(p.d_k * 31 + p.d_v + (p.causal ? 7 : 0));
  const std::vector<float> q = ref::random_stored(rng, nq, t, -2, 2),
                           k = ref::random_stored(rng, nk, t, -2, 2),
                           v = ref::random_stored(rng, nv, t), d_o = ref::random_stored(rng, no, t);
  const uint32_t es = dtype_bytes(t);
  Buffer qb = dev.allocate(nq * es, "tuner check q"), kb = dev.allocate(nk * es, "tuner check k"),
         vb = dev.allocate(nv * es, "tuner check v"), ob = dev.allocate(no * es, "tuner check o"),
         dob = dev.allocate(no * es, "tuner check d_o"),
         dqb = dev.allocate(nq * es, "tuner check d_q"),
         dkb = dev.allocate(nk * es, "tuner check d_k"),
         dvb = dev.allocate(nv * es, "tuner check d_v"),
         lseb = dev.allocate(rows * 4, "tuner check lse"),
         deltab = dev.allocate(rows * 4, "tuner check delta"),
         keylenb = dev.allocate(uint64_t(s.batch) * 4, "tuner check key_len");
  ref::upload_stored(dev, qb, q, t);
  ref::upload_stored(dev, kb, k, t);
  ref::upload_stored(dev, vb, v, t);
  ref::upload_stored(dev, dob, d_o, t);
  dev.upload(keylenb, s.key_len);
  ref::poison(dev, ob, no, t);
  ref::poison(dev, dqb, nq, t);
  ref::poison(dev, dkb, nk, t);
  ref::poison(dev, dvb, nv, t);
  ref::poison(dev, lseb, rows, DType::f32);

  ops::AttentionBackwardArgs g;
  ops::AttentionArgs& a = g.fwd;
  a.batch = uint32_t(s.batch), a.heads = uint32_t(s.heads);
  a.len_q = uint32_t(s.len_q), a.len_k = uint32_t(s.len_k);
  a.d_k = p.d_k, a.d_v = p.d_v, a.dtype = t, a.causal = p.causal;
  a.q = qb, a.k = kb, a.v = vb, a.o = ob, a.lse = lseb, a.key_len = keylenb;
  g.d_o = dob, g.d_q = dqb, g.d_k = dkb, g.d_v = dvb, g.delta = deltab;
  // The candidate at its own kernel; the others as an untuned run would have them.
  const Buffer* wrong_out = &ob;
  switch (p.kernel) {
    case ops::AttentionKernel::forward:
      a.tiles = candidate;
      break;
    case ops::AttentionKernel::backward_kv:
      g.tiles_kv = candidate;
      wrong_out = &dkb;
      break;
    case ops::AttentionKernel::backward_q:
      g.tiles_q = candidate;
      wrong_out = &dqb;
      break;
  }
  try {
    Recorder rec(dev);
    ops::attention_forward(dev, rec, a);
    ops::attention_backward(dev, rec, g);
    if (sabotage && sabotage(ops::describe(candidate)))
      rec.fill(wrong_out->ref().slice(0, 4), ref::k_wrong_bits);
    rec.finish().run();
  } catch (const Error& e) {
    return std::string("the op refused it: ") + e.what();
  }

  const ref::AttentionForward want = ref::attention_forward(s, doubles(q), doubles(k), doubles(v));
  const ref::AttentionGrads grads =
      ref::attention_backward(s, doubles(q), doubles(k), doubles(v), doubles(d_o));
  // The shader tests' tolerances (tests/shaders/test_attention.cpp).
  const bool half = t == DType::f16;
  const double fa = half ? 2e-3 : 2e-5, fr = half ? 2e-3 : 1e-4;
  const double ba = half ? 4e-3 : 1e-4, br = half ? 4e-3 : 1e-3;
  std::string why = ref::first_wrong("O", ref::download_stored(dev, ob, no, t), want.o, fa, fr);
  if (why.empty())
    why = ref::first_wrong("log-sum-exp", dev.download<float>(lseb, rows), want.lse, 1e-5, 1e-5);
  if (why.empty())
    why = ref::first_wrong("dQ", ref::download_stored(dev, dqb, nq, t), grads.d_q, ba, br);
  if (why.empty())
    why = ref::first_wrong("dK", ref::download_stored(dev, dkb, nk, t), grads.d_k, ba, br);
  if (why.empty())
    why = ref::first_wrong("dV", ref::download_stored(dev, dvb, nv, t), grads.d_v, ba, br);
  if (!why.empty()) why += " (" + ops::attention_shape_class(p) + " check, 2x2 heads, 23-37 rows)";
  return why;
}

}  // namespace vkf::tune
