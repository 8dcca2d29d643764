#include "reference/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/philox.h"

namespace vkf::ref {
namespace {

// Softmax weights P[j] of row (b, h, i) over its visible keys (0 elsewhere); returns the
// log-sum-exp, and the number of visible keys in `visible`.
double row_weights(const AttentionShape& s, const std::vector<double>& q,
                   const std::vector<double>& k, int b, int h, int i, std::vector<double>& p,
                   int& visible) {
  double scale = s.scale != 0.0 ? s.scale : 1.0 / std::sqrt(double(s.d_k));
  int klim = s.key_len.empty() ? s.len_k : std::clamp(s.key_len[b], 0, s.len_k);
  int qlim = s.q_len.empty() ? s.len_q : std::clamp(s.q_len[b], 0, s.len_q);
  visible = i >= qlim ? 0 : s.causal ? std::min(klim, i + 1) : klim;
  p.assign(s.len_k, 0.0);
  if (visible == 0) return 0.0;
  const double* qi = &q[((size_t(b) * s.heads + h) * s.len_q + i) * s.d_k];
  double mx = -INFINITY;
  for (int j = 0; j < visible; ++j) {
    const double* kj = &k[((size_t(b) * s.heads + h) * s.len_k + j) * s.d_k];
    double dot = 0.0;
    for (int d = 0; d < s.d_k; ++d) dot += qi[d] * kj[d];
    p[j] = dot * scale;
    mx = std::max(mx, p[j]);
  }
  double sum = 0.0;
  for (int j = 0; j < visible; ++j) sum += std::exp(p[j] - mx);
  double lse = mx + std::log(sum);
  for (int j = 0; j < visible; ++j) p[j] = std::exp(p[j] - lse);
  return lse;
}

double drop(const AttentionShape& s, int b, int h, int i, int j) {
  uint32_t row = (uint32_t(b) * uint32_t(s.heads) + uint32_t(h)) * uint32_t(s.len_q) + uint32_t(i);
  uint32_t element = row * uint32_t(s.len_k) + uint32_t(j);
  return double(vkf::dropout_scale(s.dropout_p, s.seed, s.step, s.tensor_id, element));
}

}  // namespace

AttentionForward attention_forward(const AttentionShape& s, const std::vector<double>& q,
                                   const std::vector<double>& k, const std::vector<double>& v) {
  AttentionForward f;
  f.o.assign(size_t(s.batch) * s.heads * s.len_q * s.d_v, 0.0);
  f.lse.assign(size_t(s.batch) * s.heads * s.len_q, 0.0);
  std::vector<double> p;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.len_q; ++i) {
        size_t row = (size_t(b) * s.heads + h) * s.len_q + i;
        int visible = 0;
        f.lse[row] = row_weights(s, q, k, b, h, i, p, visible);
        double* oi = &f.o[row * s.d_v];
        for (int j = 0; j < visible; ++j) {
          double w = p[j] * drop(s, b, h, i, j);
          const double* vj = &v[((size_t(b) * s.heads + h) * s.len_k + j) * s.d_v];
          for (int d = 0; d < s.d_v; ++d) oi[d] += w * vj[d];
        }
      }
  return f;
}

AttentionGrads attention_backward(const AttentionShape& s, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v,
                                  const std::vector<double>& d_o) {
  double scale = s.scale != 0.0 ? s.scale : 1.0 / std::sqrt(double(s.d_k));
  AttentionGrads g;
  g.d_q.assign(q.size(), 0.0);
  g.d_k.assign(k.size(), 0.0);
  g.d_v.assign(v.size(), 0.0);
  std::vector<double> p, dp;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.len_q; ++i) {
        size_t row = (size_t(b) * s.heads + h) * s.len_q + i;
        int visible = 0;
        row_weights(s, q, k, b, h, i, p, visible);
        const double* doi = &d_o[row * s.d_v];
        // O_i = sum_j P_ij Z_ij V_j: dV_j += P_ij Z_ij dO_i, dP_ij = Z_ij dO_i . V_j.
        dp.assign(s.len_k, 0.0);
        double pdp = 0.0;
        for (int j = 0; j < visible; ++j) {
          size_t kv = (size_t(b) * s.heads + h) * s.len_k + j;
          double z = drop(s, b, h, i, j);
          double dot = 0.0;
          for (int d = 0; d < s.d_v; ++d) {
            dot += doi[d] * v[kv * s.d_v + d];
            g.d_v[kv * s.d_v + d] += p[j] * z * doi[d];
          }
          dp[j] = z * dot;
          pdp += p[j] * dp[j];
        }
        // Softmax backward: dS_ij = P_ij (dP_ij - sum_l P_il dP_il); S = scale * Q K^T.
        for (int j = 0; j < visible; ++j) {
          size_t kv = (size_t(b) * s.heads + h) * s.len_k + j;
          double ds = p[j] * (dp[j] - pdp) * scale;
          for (int d = 0; d < s.d_k; ++d) {
            g.d_q[row * s.d_k + d] += ds * k[kv * s.d_k + d];
            g.d_k[kv * s.d_k + d] += ds * q[row * s.d_k + d];
          }
        }
      }
  return g;
}

}  // namespace vkf::ref
