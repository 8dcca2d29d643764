#include "model/op_problems.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "model/decode/state.h"
#include "model/layers.h"
#include "model/params.h"

namespace vkf::model {

ModelWork training_work(int64_t max_tokens, DType dtype) {
  ModelWork w;
  w.tokens = uint32_t(std::clamp<int64_t>(max_tokens, 1, 4096));
  w.training = true;
  w.dtype = dtype;
  return w;
}

ModelWork decoding_work(uint32_t beam, uint32_t batch_size, DType dtype) {
  ModelWork w;
  w.tokens = beam * batch_size;
  w.training = false;
  w.dtype = dtype;
  w.beam = beam;
  w.sentences = batch_size;
  return w;
}

ops::OpProblems model_op_problems(const ModelConfig& c, const ModelWork& work,
                                  const DeviceInfo& info) {
  ops::OpProblems out;
  const uint32_t tokens = work.tokens, d = uint32_t(c.d_model), ff = uint32_t(c.d_ff),
                 v = uint32_t(c.vocab_size);
  // (in, out) of each kind of Linear: attention projections, FFN in and out, the vocabulary.
  std::vector<std::pair<uint32_t, uint32_t>> linears{{d, d}, {d, ff}, {ff, d}};
  if (v) linears.emplace_back(d, v);
  for (auto [in, o] : linears)
    // Decoding gives the forward a split-k workspace (model/decode/state.h), training not.
    for (const ops::MatmulProblem& p :
         linear_matmul_problems(in, o, tokens, work.dtype, work.training, !work.training))
      out.of<ops::MatmulFamily>().push_back(p);
  // The encoder's self-attention and the cross-attention (full) and, training, the decoder's
  // (causal) over sentences of `len` tokens.
  const uint32_t len = std::max(1u, std::min(work.len, tokens));
  const uint32_t dk = uint32_t(c.head_dim_k()), dv = uint32_t(c.head_dim_v());
  for (bool causal : {false, true}) {
    if (causal && !work.training) continue;
    for (auto kernel : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                        ops::AttentionKernel::backward_q}) {
      if (kernel != ops::AttentionKernel::forward && !work.training) continue;
      out.of<ops::AttentionFamily>().push_back({{work.dtype, kernel, dk, dv, len, len, causal},
                                                std::max(1u, tokens / len),
                                                uint32_t(c.heads)});
    }
  }
  // The row kernels are timed at up to 1024 rows (256 on a CPU device): a workgroup reduces a
  // row, so more rows repeat the same work (1024 workgroups fill a GPU, 256 a CPU's threads),
  // while a CPU device spends a second or more on 1024 rows of the vocabulary.
  const uint32_t rows = std::min(tokens, info.is_cpu() ? 256u : 1024u);
  out.of<ops::LayerNormFamily>().push_back({work.dtype, false, rows, d});
  if (work.training) out.of<ops::LayerNormFamily>().push_back({work.dtype, true, rows, d});
  if (work.training && v > 0) out.of<ops::CrossEntropyFamily>().push_back({work.dtype, rows, v});
  if (work.training && v > 0)
    out.of<ops::AdamFamily>().push_back(
        {uint32_t(std::min<uint64_t>(ParamLayout(c).total_floats(), 0xffffffffu))});
  if (work.beam && work.sentences && v > 0)
    out.of<ops::TopKFamily>().push_back({DType::f32, work.beam * work.sentences, v,
                                         decode::DecodeShape::candidates_for(work.beam, v)});
  return out;
}

}  // namespace vkf::model
