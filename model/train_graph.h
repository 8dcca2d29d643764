#pragma once
// One recorded training (or scoring) step for one bucket shape: embeddings, N encoder and
// decoder layers (post-LN), shared-embedding output projection, label-smoothed loss, and the
// full backward into the parameter gradients (which accumulate, so K micro-batches sum before
// one optimizer step). Recorded once, replayed for every batch of that shape; the host writes
// only the token ids and the per-step scalars.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/device.h"
#include "engine/recorder.h"
#include "engine/step_scalars.h"
#include "model/blocks/decoder_layer.h"
#include "model/blocks/encoder_layer.h"
#include "model/blocks/output_projection.h"
#include "model/device_params.h"
#include "model/layers.h"

namespace vkf::model {

struct BucketShape {
  uint32_t batch = 0, src_len = 0, tgt_len = 0;
  bool operator<(const BucketShape& o) const {
    return std::tie(batch, src_len, tgt_len) < std::tie(o.batch, o.src_len, o.tgt_len);
  }
};

struct GraphOptions {
  bool backward = true;  // false: forward and loss only (validation, scoring)
  bool dropout = true;   // false: dropout off (validation, scoring, gradient checks)
  bool profile = false;
  // Shared buffers; null: the graph owns its own.
  std::shared_ptr<ActivationPool> pool;
};

// Token ids of one padded batch, row-major, pad at the end of each row.
struct BatchTokens {
  std::vector<int32_t> src;      // [batch, src_len]
  std::vector<int32_t> tgt_in;   // [batch, tgt_len]
  std::vector<int32_t> tgt_out;  // [batch, tgt_len]
  std::vector<int32_t> src_len;  // [batch] non-pad source tokens
  std::vector<int32_t> tgt_len;  // [batch] non-pad target tokens
};

struct StepResult {
  double loss_sum = 0;              // label-smoothed, over non-pad targets
  double nll_sum = 0;               // plain negative log-likelihood
  uint64_t tokens = 0;              // non-pad targets
  std::vector<double> row_logprob;  // per sentence: summed log p(target) (scoring)
};

class TrainGraph {
 public:
  TrainGraph(Device& dev, DeviceParams& params, const BucketShape& shape,
             const BufferRef& step_scalars, const GraphOptions& options);
  // Forward and loss only (options.backward false): scoring needs the weights alone.
  TrainGraph(Device& dev, const DeviceWeights& weights, const BucketShape& shape,
             const BufferRef& step_scalars, const GraphOptions& options);
  ~TrainGraph();

  const BucketShape& shape() const { return shape_; }
  // Writes the batch's ids into the graph's input buffers (host-visible, no copy).
  void set_batch(const BatchTokens& batch);
  // Runs forward (+ backward); gradients are added to the parameter gradients.
  StepResult run() {
    submit();
    return collect();
  }
  // The same in two halves, so that replicas on several devices run at once.
  void submit();
  bool ready() const { return segments_.back().sequence.ready(); }
  StepResult collect();

  // The backward is recorded in segments, one per layer: after segment k has run, the gradients
  // in final_ranges(k) (flat float ranges [first, end) of the ParamLayout) have received this
  // batch's whole contribution, so a gradient exchange can start on them while the later
  // segments run. submit() is submit_segment(0..segments()-1).
  size_t segments() const { return segments_.size(); }
  void submit_segment(size_t k) { segments_[k].sequence.submit(); }
  const std::vector<std::pair<uint64_t, uint64_t>>& final_ranges(size_t k) const {
    return segments_[k].final_ranges;
  }
  // Per-dispatch times of the last run, every segment (profiling graphs only).
  std::vector<KernelTiming> timings() const;

 private:
  TrainGraph(Device& dev, const DeviceWeights& weights, DeviceParams* training,
             const BucketShape& shape, const BufferRef& step_scalars, const GraphOptions& options);
  void record(Recorder& rec);
  void record_forward(Recorder& rec);
  void record_backward(Recorder& rec);
  // The gradients of a layer's output, its input and a temporary (swapped layer after layer),
  // and of the encoder's memory.
  struct LayerGrads {
    BufferRef out, a, b, memory;
  };
  Backward backward_context(Recorder& rec, LayerGrads& grads);
  void embedding_backward_into(Recorder& rec, const BufferRef& tokens, uint32_t len,
                               const BufferRef& dout, uint32_t tensor_id, DType dout_dtype);
  void record_loss(Recorder& rec, const BufferRef& logits, const BufferRef& targets, uint32_t rows);
  // Ends a segment: the gradients of the parameters named `prefix`* are final after it ("" for
  // all of those not final yet).
  void end_segment(Recorder& rec, const std::string& prefix);

  Device& dev_;
  const DeviceWeights& params_;
  DeviceParams* training_ = nullptr;  // null: forward only
  ModelConfig config_;
  BucketShape shape_;
  BufferRef scalars_;
  GraphOptions options_;
  std::shared_ptr<ActivationPool> pool_;
  // The host-visible inputs and outputs this graph was recorded with. Kept here, not looked up
  // by name again: a shared pool may since have replaced a buffer by a larger one for another
  // shape, and this graph's commands still read and write the one they were recorded with.
  struct HostIo {
    BufferRef src, tgt_in, tgt_out, src_len, tgt_len, loss, logp;
  } io_;
  struct Segment {
    Sequence sequence;
    std::vector<std::pair<uint64_t, uint64_t>> final_ranges;
  };
  std::vector<Segment> segments_;
  // The blocks, their parameters resolved once, and what their forwards saved for the backward.
  ParamSource source_;
  std::vector<EncoderLayer> encoder_;
  std::vector<DecoderLayer> decoder_;
  OutputProjection output_;
  struct Saved {
    EncoderSaved encoder;
    BufferRef decoder_embed;
    std::vector<DecoderLayer::Saved> decoder;
    OutputProjection::Saved output;
    BufferRef logits;  // the loss overwrites them with their gradient
  } saved_;
  std::vector<bool> final_;  // per ParamLayout entry: in an earlier segment's final_ranges
};

}  // namespace vkf::model
