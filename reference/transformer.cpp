#include "reference/transformer.h"

#include <cmath>
#include <string>

namespace vkf::ref {
namespace {

using Mat = std::vector<double>;  // row-major

struct Ctx {
  const model::ModelConfig& c;
  const model::ParamLayout& layout;
  const std::vector<double>& p;
  const double* w(const std::string& name) const { return p.data() + layout.at(name).offset; }
};

// y[n, out] = x[n, in] W[out, in]^T + b[out]
Mat linear(const Ctx& ctx, const Mat& x, int n, int in, int out, const std::string& prefix) {
  const double* W = ctx.w(prefix + ".weight");
  const double* b = ctx.w(prefix + ".bias");
  Mat y(size_t(n) * out);
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < out; ++o) {
      double s = b[o];
      for (int k = 0; k < in; ++k) s += x[size_t(i) * in + k] * W[size_t(o) * in + k];
      y[size_t(i) * out + o] = s;
    }
  return y;
}

// LayerNorm(x + s) with gain and bias.
Mat add_norm(const Ctx& ctx, const Mat& x, const Mat& s, int n, int d, const std::string& prefix) {
  const double* g = ctx.w(prefix + ".weight");
  const double* b = ctx.w(prefix + ".bias");
  Mat y(size_t(n) * d);
  for (int i = 0; i < n; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < d; ++j) mean += x[size_t(i) * d + j] + s[size_t(i) * d + j];
    mean /= d;
    for (int j = 0; j < d; ++j) {
      double h = x[size_t(i) * d + j] + s[size_t(i) * d + j] - mean;
      var += h * h;
    }
    var /= d;
    double rstd = 1.0 / std::sqrt(var + ctx.c.layer_norm_eps);
    for (int j = 0; j < d; ++j)
      y[size_t(i) * d + j] =
          (x[size_t(i) * d + j] + s[size_t(i) * d + j] - mean) * rstd * g[j] + b[j];
  }
  return y;
}

// Multi-head attention of queries xq [B*Lq, d] over memory xkv [B*Lk, d]; key j of batch b is
// visible when key_valid[b][j] and (not causal or j <= i).
Mat attention(const Ctx& ctx, const Mat& xq, const Mat& xkv, int B, int Lq, int Lk,
              const std::vector<int32_t>& key_tokens, bool causal, const std::string& prefix) {
  const auto& c = ctx.c;
  const int d = c.d_model, H = c.heads, dk = c.head_dim_k(), dv = c.head_dim_v();
  Mat q = linear(ctx, xq, B * Lq, d, H * dk, prefix + ".q_proj");
  Mat k = linear(ctx, xkv, B * Lk, d, H * dk, prefix + ".k_proj");
  Mat v = linear(ctx, xkv, B * Lk, d, H * dv, prefix + ".v_proj");
  Mat o(size_t(B) * Lq * H * dv, 0.0);
  const double scale = 1.0 / std::sqrt(double(dk));
  std::vector<double> s(Lk);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Lq; ++i) {
        double mx = -INFINITY;
        for (int j = 0; j < Lk; ++j) {
          bool visible = key_tokens[size_t(b) * Lk + j] != c.pad_id && (!causal || j <= i);
          if (!visible) {
            s[j] = -INFINITY;
            continue;
          }
          double dot = 0;
          for (int e = 0; e < dk; ++e)
            dot += q[(size_t(b) * Lq + i) * H * dk + h * dk + e] *
                   k[(size_t(b) * Lk + j) * H * dk + h * dk + e];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) continue;  // fully masked row: output zero
        double z = 0;
        for (int j = 0; j < Lk; ++j) z += s[j] == -INFINITY ? 0 : std::exp(s[j] - mx);
        for (int j = 0; j < Lk; ++j) {
          if (s[j] == -INFINITY) continue;
          double pj = std::exp(s[j] - mx) / z;
          for (int e = 0; e < dv; ++e)
            o[(size_t(b) * Lq + i) * H * dv + h * dv + e] +=
                pj * v[(size_t(b) * Lk + j) * H * dv + h * dv + e];
        }
      }
  return linear(ctx, o, B * Lq, H * dv, d, prefix + ".o_proj");
}

Mat ffn(const Ctx& ctx, const Mat& x, int n, const std::string& prefix) {
  Mat h = linear(ctx, x, n, ctx.c.d_model, ctx.c.d_ff, prefix + ".fc1");
  for (auto& v : h) v = std::max(0.0, v);
  return linear(ctx, h, n, ctx.c.d_ff, ctx.c.d_model, prefix + ".fc2");
}

Mat embed(const Ctx& ctx, const std::vector<int32_t>& tokens, int B, int L) {
  const int d = ctx.c.d_model;
  const double* E = ctx.w("embed.weight");
  Mat x(size_t(B) * L * d);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < L; ++t) {
      int32_t id = tokens[size_t(b) * L + t];
      for (int j = 0; j < d; ++j) {
        double pe;
        if (ctx.c.learned_positions) {
          pe = ctx.w("pos_embed.weight")[size_t(t) * d + j];
        } else {
          int i2 = j / 2 * 2;  // PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...)
          double angle = t / std::pow(10000.0, double(i2) / d);
          pe = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
        double v = E[size_t(id) * d + j] * std::sqrt(double(d)) + pe;
        x[(size_t(b) * L + t) * d + j] = id == ctx.c.pad_id ? 0.0 : v;
      }
    }
  return x;
}

}  // namespace

TransformerOutput transformer_forward(const model::ModelConfig& c, const model::ParamLayout& layout,
                                      const std::vector<double>& params,
                                      const TransformerBatch& batch) {
  Ctx ctx{c, layout, params};
  const int B = batch.batch, Ls = batch.src_len, Lt = batch.tgt_len, d = c.d_model;
  Mat x = embed(ctx, batch.src, B, Ls);
  for (int l = 0; l < c.encoder_layers; ++l) {
    std::string p = "encoder.layers." + std::to_string(l);
    x = add_norm(ctx, x, attention(ctx, x, x, B, Ls, Ls, batch.src, false, p + ".self_attn"),
                 B * Ls, d, p + ".self_attn_norm");
    x = add_norm(ctx, x, ffn(ctx, x, B * Ls, p + ".ffn"), B * Ls, d, p + ".ffn_norm");
  }
  Mat y = embed(ctx, batch.tgt_in, B, Lt);
  for (int l = 0; l < c.decoder_layers; ++l) {
    std::string p = "decoder.layers." + std::to_string(l);
    y = add_norm(ctx, y, attention(ctx, y, y, B, Lt, Lt, batch.tgt_in, true, p + ".self_attn"),
                 B * Lt, d, p + ".self_attn_norm");
    y = add_norm(ctx, y, attention(ctx, y, x, B, Lt, Ls, batch.src, false, p + ".cross_attn"),
                 B * Lt, d, p + ".cross_attn_norm");
    y = add_norm(ctx, y, ffn(ctx, y, B * Lt, p + ".ffn"), B * Lt, d, p + ".ffn_norm");
  }
  TransformerOutput out;
  const int V = c.vocab_size;
  const double* E = ctx.w("embed.weight");
  out.logits.assign(size_t(B) * Lt * V, 0.0);
  out.row_logprob.assign(B, 0.0);
  const double eps = c.label_smoothing;
  for (int r = 0; r < B * Lt; ++r) {
    double* z = out.logits.data() + size_t(r) * V;
    double mx = -INFINITY;
    for (int v = 0; v < V; ++v) {
      double s = 0;
      for (int j = 0; j < d; ++j) s += y[size_t(r) * d + j] * E[size_t(v) * d + j];
      z[v] = s;
      mx = std::max(mx, s);
    }
    int32_t target = batch.tgt_out[r];
    if (target == c.pad_id) continue;
    double lse = 0, sum_logp = 0;
    for (int v = 0; v < V; ++v) lse += std::exp(z[v] - mx);
    lse = mx + std::log(lse);
    for (int v = 0; v < V; ++v) sum_logp += z[v] - lse;
    double logp_t = z[target] - lse;
    // Smoothing mass eps spread uniformly over all V entries (fairseq, Marian).
    out.loss += -(1.0 - eps) * logp_t - eps / V * sum_logp;
    out.nll += -logp_t;
    out.row_logprob[r / Lt] += logp_t;
    out.tokens++;
  }
  return out;
}

}  // namespace vkf::ref
