#pragma once
// Double-precision CPU forward of the whole Transformer (post-LN, shared embeddings, sinusoidal
// positions), dropout off: the reference the device model is checked against, and by finite
// differences the reference for its gradients.
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/params.h"

namespace vkf::ref {

struct TransformerBatch {
  int batch = 0, src_len = 0, tgt_len = 0;
  std::vector<int32_t> src;      // [batch, src_len], pad at the end of each row
  std::vector<int32_t> tgt_in;   // [batch, tgt_len]: BOS + pieces, padded
  std::vector<int32_t> tgt_out;  // [batch, tgt_len]: pieces + EOS, padded
};

struct TransformerOutput {
  std::vector<double> logits;       // [batch * tgt_len, vocab]
  double loss = 0;                  // label-smoothed cross-entropy summed over non-pad targets
  double nll = 0;                   // plain negative log-likelihood, summed
  int64_t tokens = 0;               // non-pad targets
  std::vector<double> row_logprob;  // [batch]: summed log p(target) per sentence (vkf score)
};

TransformerOutput transformer_forward(const model::ModelConfig& config,
                                      const model::ParamLayout& layout,
                                      const std::vector<double>& params,
                                      const TransformerBatch& batch);

}  // namespace vkf::ref
