#include "model/decode/decoder_step.h"

#include "engine/ops/attention.h"
#include "engine/ops/indexed_rows.h"
#include "engine/ops/topk.h"
#include "model/blocks/decoder_layer.h"
#include "model/blocks/output_projection.h"

namespace vkf::model::decode {
namespace {

struct Dims {
  uint32_t B, K, R, Ls, T, d, H, dk, dv, dff, V;
};

// Few query rows (1 for self-attention, the beam for cross-attention): tiles of that many rows,
// not the training default of 64 (which would compute mostly empty rows).
void attend(const Forward& f, ops::AttentionArgs a) {
  uint32_t block_q = 1;
  while (block_q < a.len_q && block_q < 64) block_q *= 2;
  a.tiles = {64, block_q, 32};
  ops::attention_forward(f.dev, f.rec, a);
}

}  // namespace

void record_decoder_step(const Forward& f, DecodeState& state, int from, int to) {
  const ModelConfig& c = f.config();
  const DecodeShape& s = state.shape();
  const Dims D{s.batch,
               s.beam,
               s.rows(),
               s.src_len,
               s.max_out,
               uint32_t(c.d_model),
               uint32_t(c.heads),
               uint32_t(c.head_dim_k()),
               uint32_t(c.head_dim_v()),
               uint32_t(c.d_ff),
               uint32_t(c.vocab_size)};
  const uint32_t R = D.R;
  // The caches hold f16 pairs in 32-bit words in fp16 (DecodeState checks the widths are even):
  // the row copies below move words, so their widths are in words.
  const uint32_t per_word = f.dtype() == DType::f16 ? 2 : 1;

  if (from != to) {  // beam reordering: row r continues the hypothesis of row origin[r]
    for (int l = 0; l < c.decoder_layers; ++l) {
      for (bool key : {true, false}) {
        const uint32_t width = D.H * (key ? D.dk : D.dv) / per_word;
        ops::GatherRowsArgs g;
        g.src = key ? state.cache_k(from, l) : state.cache_v(from, l);
        g.dst = key ? state.cache_k(to, l) : state.cache_v(to, l);
        g.index = state.origin();
        g.limit = state.filled();
        g.rows = R;
        g.cols = D.T * width;
        g.limit_unit = width;
        ops::gather_rows(f.dev, f.rec, g);
      }
    }
  }

  const ParamSource p{f.params};
  BufferRef y = f.act("dec.embed", uint64_t{R} * D.d);
  embed(f, state.tokens(), R, 0, state.positions(), y, 0);
  for (int l = 0; l < c.decoder_layers; ++l) {
    const DecoderLayer layer(p, l);
    const std::string& n = layer.name();
    // Self-attention over the cache.
    BufferRef q = f.act(n + ".q", uint64_t{R} * D.H * D.dk);
    BufferRef k = f.act(n + ".k", uint64_t{R} * D.H * D.dk);
    BufferRef v = f.act(n + ".v", uint64_t{R} * D.H * D.dv);
    BufferRef o = f.act(n + ".o", uint64_t{R} * D.H * D.dv);
    const MultiHeadAttention& sa = layer.self_attn;
    // Split-k workspace parts 0, 1, 2: the three projections may run side by side.
    linear_forward(f, sa.q_proj, y, q, R);
    linear_forward(f, sa.k_proj, y, k, R, false, 1);
    linear_forward(f, sa.v_proj, y, v, R, false, 2);
    const BufferRef ck = state.cache_k(to, l), cv = state.cache_v(to, l);
    ops::scatter_rows(f.dev, f.rec,
                      {.src = k,
                       .dst = ck,
                       .position = state.positions(),
                       .rows = R,
                       .cols = D.H * D.dk / per_word,
                       .positions = D.T});
    ops::scatter_rows(f.dev, f.rec,
                      {.src = v,
                       .dst = cv,
                       .position = state.positions(),
                       .rows = R,
                       .cols = D.H * D.dv / per_word,
                       .positions = D.T});
    attend(f, attention_args(c, R, 1, D.T,
                             {.q = q,
                              .k = ck,
                              .v = cv,
                              .o = o,
                              .lse = f.buf(n + ".self.lse", uint64_t{R} * D.H),
                              .key_len = state.self_len(),
                              .dtype = f.dtype()}));
    BufferRef s1 = f.act(n + ".s1", uint64_t{R} * D.d), y1 = f.act(n + ".y1", uint64_t{R} * D.d);
    linear_forward(f, sa.o_proj, o, s1, R);
    layer.self_attn_norm.forward(f, n + ".ln1", y, s1, y1, R, 1, 0);

    // Cross-attention: sentence b's beam rows are the queries over its source.
    const MultiHeadAttention& ca = layer.cross_attn;
    linear_forward(f, ca.q_proj, y1, q, R);
    attend(f, attention_args(c, D.B, D.K, D.Ls,
                             {.q = q,
                              .k = state.cross_k(l),
                              .v = state.cross_v(l),
                              .o = o,
                              .lse = f.buf(n + ".cross.lse", uint64_t{D.B} * D.H * D.K),
                              .key_len = state.src_len(),
                              .dtype = f.dtype()}));
    BufferRef s2 = f.act(n + ".s2", uint64_t{R} * D.d), y2 = f.act(n + ".y2", uint64_t{R} * D.d);
    linear_forward(f, ca.o_proj, o, s2, R);
    layer.cross_attn_norm.forward(f, n + ".ln2", y1, s2, y2, R, 1, 0);

    BufferRef s3 = f.act(n + ".s3", uint64_t{R} * D.d), y3 = f.act(n + ".y3", uint64_t{R} * D.d);
    layer.ffn.forward(f, n + ".ffn", y2, s3, R);
    layer.ffn_norm.forward(f, n + ".ln3", y2, s3, y3, R, 1, 0);
    y = y3;
  }

  // log p(next token) = log_softmax(y E^T) with the shared embedding, at the top candidates of
  // each row only (to the host): the top-k picks from the logits and subtracts their row's
  // log-sum-exp (TopKArgs::log_softmax), so the whole row is read once and never rewritten. In
  // fp16 the projection stores fp16 logits (accumulated in fp32), which the top-k reads as they
  // are; the log-sum-exp and the candidates' log-probabilities are fp32.
  BufferRef logits = f.act("logits", uint64_t{R} * D.V);
  OutputProjection(p).forward(f, y, logits, R);
  ops::TopKArgs t;
  t.dtype = f.dtype();
  t.values = logits;
  t.out_values = state.out_logp();
  t.out_indices = state.out_token();
  t.scratch = f.buf("topk.scratch",
                    ops::topk_scratch_bytes(f.dev, f.dtype(), R, D.V, s.candidates, true) / 4 + 1);
  t.rows = R;
  t.n = D.V;
  t.k = s.candidates;
  t.log_softmax = true;
  ops::topk(f.dev, f.rec, t);
}

}  // namespace vkf::model::decode
