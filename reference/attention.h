#pragma once
// Double-precision CPU reference of the fused attention op (engine/ops/attention.h): forward
// with key-padding, causal and query-length masks and Philox dropout, and its analytic backward.
// Tensors are contiguous: q [batch, heads, len_q, d_k], k [batch, heads, len_k, d_k],
// v [batch, heads, len_k, d_v], o [batch, heads, len_q, d_v], lse [batch, heads, len_q].
#include <cstdint>
#include <vector>

namespace vkf::ref {

struct AttentionShape {
  int batch = 1, heads = 1, len_q = 1, len_k = 1, d_k = 1, d_v = 1;
  bool causal = false;
  std::vector<int> key_len;  // empty = all keys valid
  std::vector<int> q_len;    // empty = all rows valid
  double scale = 0.0;        // 0 = 1/sqrt(d_k)
  float dropout_p = 0.0f;
  uint32_t seed = 0, step = 0, tensor_id = 0;  // dropout stream (engine/philox.h)
};

struct AttentionForward {
  std::vector<double> o;    // [batch, heads, len_q, d_v]
  std::vector<double> lse;  // [batch, heads, len_q]; 0 where a row sees no key
};

struct AttentionGrads {
  std::vector<double> d_q, d_k, d_v;  // shaped like q, k, v
};

AttentionForward attention_forward(const AttentionShape& s, const std::vector<double>& q,
                                   const std::vector<double>& k, const std::vector<double>& v);
AttentionGrads attention_backward(const AttentionShape& s, const std::vector<double>& q,
                                  const std::vector<double>& k, const std::vector<double>& v,
                                  const std::vector<double>& d_o);

}  // namespace vkf::ref
