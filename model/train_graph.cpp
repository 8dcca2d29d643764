#include "model/train_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "engine/error.h"
#include "engine/ops/basic.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/loss.h"

namespace vkf::model {

TrainGraph::TrainGraph(Device& dev, DeviceParams& params, const BucketShape& shape,
                       const BufferRef& step_scalars, const GraphOptions& options)
    : TrainGraph(dev, params, &params, shape, step_scalars, options) {}

TrainGraph::TrainGraph(Device& dev, const DeviceWeights& weights, const BucketShape& shape,
                       const BufferRef& step_scalars, const GraphOptions& options)
    : TrainGraph(dev, weights, nullptr, shape, step_scalars, options) {}

TrainGraph::TrainGraph(Device& dev, const DeviceWeights& weights, DeviceParams* training,
                       const BucketShape& shape, const BufferRef& step_scalars,
                       const GraphOptions& options)
    : dev_(dev),
      params_(weights),
      training_(training),
      config_(weights.config()),
      shape_(shape),
      scalars_(step_scalars),
      options_(options),
      pool_(options.pool ? options.pool : std::make_shared<ActivationPool>(dev)),
      source_{weights, training},
      encoder_(encoder_layers(source_)),
      decoder_(decoder_layers(source_)),
      output_(source_) {
  if (shape.batch == 0 || shape.src_len == 0 || shape.tgt_len == 0)
    throw Error("TrainGraph: empty bucket shape");
  if (options.backward && training_ == nullptr)
    throw Error("TrainGraph: a backward pass needs the training state (DeviceParams)");
  if (int(shape.src_len) > config_.max_len || int(shape.tgt_len) > config_.max_len)
    throw Error("TrainGraph: bucket length " +
                std::to_string(std::max(shape.src_len, shape.tgt_len)) +
                " exceeds the model's max_len " + std::to_string(config_.max_len));
  Recorder rec(dev, {.profile = options.profile});
  final_.assign(params_.layout().params().size(), false);
  record(rec);
  end_segment(rec, "");
}

TrainGraph::~TrainGraph() = default;

void TrainGraph::set_batch(const BatchTokens& b) {
  const uint64_t ns = uint64_t{shape_.batch} * shape_.src_len,
                 nt = uint64_t{shape_.batch} * shape_.tgt_len;
  if (b.src.size() != ns || b.tgt_in.size() != nt || b.tgt_out.size() != nt ||
      b.src_len.size() != shape_.batch || b.tgt_len.size() != shape_.batch)
    throw Error("TrainGraph::set_batch: batch does not match the bucket [" +
                std::to_string(shape_.batch) + " x " + std::to_string(shape_.src_len) + "/" +
                std::to_string(shape_.tgt_len) + "]");
  auto put = [](const BufferRef& dst, const std::vector<int32_t>& v) {
    std::memcpy(dst.mapped, v.data(), v.size() * 4);
  };
  put(io_.src, b.src);
  put(io_.tgt_in, b.tgt_in);
  put(io_.tgt_out, b.tgt_out);
  put(io_.src_len, b.src_len);
  put(io_.tgt_len, b.tgt_len);
}

void TrainGraph::submit() {
  for (Segment& s : segments_) s.sequence.submit();
}

std::vector<KernelTiming> TrainGraph::timings() const {
  std::vector<KernelTiming> all;
  for (const Segment& s : segments_) {
    std::vector<KernelTiming> t = s.sequence.timings();
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

void TrainGraph::end_segment(Recorder& rec, const std::string& prefix) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  const auto& params = params_.layout().params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (final_[i] || params[i].name.compare(0, prefix.size(), prefix) != 0) continue;
    final_[i] = true;
    // Padding up to the next tensor belongs to this one, so ranges tile the flat buffer.
    const uint64_t first = params[i].offset, end = i + 1 < params.size()
                                                       ? params[i + 1].offset
                                                       : params_.layout().total_floats();
    if (!ranges.empty() && ranges.back().second == first)
      ranges.back().second = end;
    else
      ranges.emplace_back(first, end);
  }
  // In fp16 the segment ends by moving its final fp16 gradients into the fp32 ones, which the
  // exchange and the optimizer read (and which accumulate across micro-batches in fp32).
  if (training_ && options_.backward)
    for (auto [first, end] : ranges) training_->drain_half_grads(rec, first, end);
  segments_.push_back(Segment{rec.cut(), std::move(ranges)});
}

StepResult TrainGraph::collect() {
  for (Segment& s : segments_) s.sequence.wait();
  StepResult r;
  const uint32_t B = shape_.batch, Lt = shape_.tgt_len;
  std::vector<float> loss(uint64_t{B} * Lt), logp(uint64_t{B} * Lt);
  std::memcpy(loss.data(), io_.loss.mapped, loss.size() * 4);
  std::memcpy(logp.data(), io_.logp.mapped, logp.size() * 4);
  const auto* tgt = reinterpret_cast<const int32_t*>(io_.tgt_out.mapped);
  r.row_logprob.assign(B, 0.0);
  for (uint64_t i = 0; i < loss.size(); ++i) {
    if (tgt[i] == config_.pad_id) continue;
    r.loss_sum += loss[i];
    r.nll_sum -= logp[i];
    r.row_logprob[i / Lt] += logp[i];
    r.tokens++;
  }
  return r;
}

void TrainGraph::record(Recorder& rec) {
  record_forward(rec);
  if (options_.backward) record_backward(rec);
}

// ---------------------------------------------------------------------------------------------
// Forward

void TrainGraph::record_forward(Recorder& rec) {
  const ModelConfig& c = config_;
  const uint32_t B = shape_.batch, Ls = shape_.src_len, Lt = shape_.tgt_len,
                 d = uint32_t(c.d_model), V = uint32_t(c.vocab_size);
  const uint32_t Nt = B * Lt;
  ActivationPool& b = *pool_;
  const Forward f{dev_,
                  rec,
                  params_,
                  source_of(b),
                  scalars_,
                  options_.dropout ? c.dropout : 0.0f,
                  options_.dropout ? c.attention_dropout : 0.0f};
  io_.src = b.host("in.src", uint64_t{B} * Ls);
  io_.tgt_in = b.host("in.tgt_in", Nt);
  io_.tgt_out = b.host("in.tgt_out", Nt);
  io_.src_len = b.host("in.src_len", B);
  io_.tgt_len = b.host("in.tgt_len", B);
  const BufferRef src = io_.src, tgt_in = io_.tgt_in, tgt_out = io_.tgt_out, src_len = io_.src_len,
                  tgt_len = io_.tgt_len;

  saved_.encoder = encoder_forward(f, encoder_, src, src_len, B, Ls);
  const BufferRef memory = saved_.encoder.memory();

  BufferRef y = saved_.decoder_embed = f.act("dec.embed", uint64_t{Nt} * d);
  embed(f, tgt_in, Nt, Lt, BufferRef{}, y, dropout_id(true, 0, 15));
  for (const DecoderLayer& layer : decoder_) {
    saved_.decoder.push_back(layer.forward(f, y, memory, B, Lt, Ls, tgt_len, src_len));
    y = saved_.decoder.back().out;
  }

  BufferRef logits = saved_.logits = f.act("logits", uint64_t{Nt} * V);
  saved_.output = output_.forward(f, y, logits, Nt);

  record_loss(rec, logits, tgt_out, Nt);
}

void TrainGraph::record_loss(Recorder& rec, const BufferRef& logits, const BufferRef& targets,
                             uint32_t rows) {
  // In fp16 the logits are fp16; the softmax and the loss are fp32 arithmetic on them.
  ops::CrossEntropyArgs a;
  a.dtype = params_.activation_dtype();
  a.logits = logits;
  a.targets = targets;
  a.step = scalars_;
  io_.loss = pool_->host("out.loss", rows);
  io_.logp = pool_->host("out.logp", rows);
  a.row_loss = io_.loss;
  a.row_logp = io_.logp;
  if (options_.backward) a.dlogits = logits;  // in place: the logits are not needed again
  a.rows = rows;
  a.vocab = uint32_t(config_.vocab_size);
  a.pad_id = config_.pad_id;
  a.label_smoothing = config_.label_smoothing;
  ops::cross_entropy(dev_, rec, a);
}

// ---------------------------------------------------------------------------------------------
// Backward: every parameter gradient is accumulated (+=), activation gradients are temporaries.

// The activation-gradient temporaries every block reuses, sized for the most rows of either side
// (allocated in the order the buffers had before the blocks, which keeps their placement).
Backward TrainGraph::backward_context(Recorder& rec, LayerGrads& grads) {
  const ModelConfig& c = config_;
  const uint32_t B = shape_.batch, H = uint32_t(c.heads), dk = uint32_t(c.head_dim_k()),
                 dv = uint32_t(c.head_dim_v()), d = uint32_t(c.d_model),
                 Nmax = B * std::max(shape_.src_len, shape_.tgt_len);
  ActivationPool& b = *pool_;
  Backward ctx{dev_, rec, scalars_};
  ctx.dtype = params_.activation_dtype();
  const bool half = ctx.dtype == DType::f16;
  // Activation gradients of `elements` values of ctx.dtype, in the pool's 4-byte words.
  auto grad_buffer = [&](const std::string& name, uint64_t elements) {
    return b.write(name, half ? (elements + 1) / 2 : elements);
  };
  ctx.ones = grad_buffer("ones", Nmax);
  if (half)
    rec.fill(ctx.ones, 0x3C003C00u);  // two fp16 ones a word
  else
    ops::fill(dev_, rec, ctx.ones, Nmax, 1.0f);
  const uint64_t wide = uint64_t{Nmax} * std::max({d, H * dk, H * dv});
  grads.out = grad_buffer("grad.out", wide);
  grads.a = grad_buffer("grad.a", wide);
  grads.b = grad_buffer("grad.b", wide);
  ctx.d_ff = grad_buffer("grad.ff", uint64_t{Nmax} * uint32_t(c.d_ff));
  ctx.d_q = grad_buffer("grad.q", uint64_t{Nmax} * H * dk);
  ctx.d_k = grad_buffer("grad.k", uint64_t{Nmax} * H * dk);
  ctx.d_v = grad_buffer("grad.v", uint64_t{Nmax} * H * dv);
  ctx.d_o = grad_buffer("grad.o", uint64_t{Nmax} * H * dv);
  grads.memory = grad_buffer("grad.memory", uint64_t{B} * shape_.src_len * d);
  ctx.delta = b.write("grad.delta", uint64_t{B} * H * std::max(shape_.src_len, shape_.tgt_len));
  ctx.ln_scratch =
      b.write("grad.ln_scratch", ops::layer_norm_backward_scratch_bytes(Nmax, d) / 4 + 1);
  // The gradient matmuls' split-k workspace: as much as the layer that wants most would use.
  const uint32_t ff = uint32_t(c.d_ff), vocab = uint32_t(c.vocab_size);
  uint64_t split_bytes = 0;
  for (auto [in, out] : {std::pair{d, H * dk}, std::pair{d, H * dv}, std::pair{H * dv, d},
                         std::pair{d, ff}, std::pair{ff, d}, std::pair{d, vocab}})
    split_bytes =
        std::max(split_bytes, linear_backward_workspace_bytes(dev_, in, out, Nmax, ctx.dtype));
  if (split_bytes > 0) ctx.split_k = b.write("grad.split_k", split_bytes / 4);
  return ctx;
}

// The blocks' backwards in reverse order: the output projection, the decoder layers (each its
// own segment), the target embedding, then the encoder layers from the gradient the decoder sent
// to the memory, and the source embedding.
void TrainGraph::record_backward(Recorder& rec) {
  const uint32_t B = shape_.batch, Ns = B * shape_.src_len, Nt = B * shape_.tgt_len,
                 d = uint32_t(config_.d_model);
  LayerGrads g;
  const Backward ctx = backward_context(rec, g);
  auto rows_d = [&](const BufferRef& r, uint32_t rows) { return ctx.part(r, uint64_t{rows} * d); };

  BufferRef gy = rows_d(g.out, Nt), ga = rows_d(g.a, Nt), gb = rows_d(g.b, Nt);
  output_.backward(ctx, saved_.output, saved_.logits, gy);
  rec.fill(g.memory, 0);
  for (size_t l = decoder_.size(); l-- > 0;) {
    decoder_[l].backward(ctx, saved_.decoder[l], gy, ga, gb, g.memory);
    std::swap(gy, ga);  // gy: the gradient of the layer's input, the output of the one below
    end_segment(rec, "decoder.layers." + std::to_string(l) + ".");
  }
  embedding_backward_into(rec, io_.tgt_in, shape_.tgt_len, gy, dropout_id(true, 0, 15), ctx.dtype);

  const BufferRef gx = rows_d(g.out, Ns);
  ops::CopyArgs cp;
  cp.src = g.memory;
  cp.dst = gx;
  // copy moves 32-bit words: fp16 values two a word (the buffers hold whole words).
  cp.cols = ctx.dtype == DType::f16 ? (Ns * d + 1) / 2 : Ns * d;
  ops::copy(dev_, rec, cp);
  for (size_t l = encoder_.size(); l-- > 0;) {
    encoder_[l].backward(ctx, saved_.encoder.layers[l], gx, rows_d(g.a, Ns), rows_d(g.b, Ns));
    end_segment(rec, "encoder.layers." + std::to_string(l) + ".");
  }
  embedding_backward_into(rec, io_.src, shape_.src_len, gx, dropout_id(false, 0, 15), ctx.dtype);
}

void TrainGraph::embedding_backward_into(Recorder& rec, const BufferRef& tokens, uint32_t len,
                                         const BufferRef& dout, uint32_t tensor_id,
                                         DType dout_dtype) {
  const ModelConfig& c = config_;
  const uint32_t count = shape_.batch * len;
  ops::EmbeddingBackwardArgs e;
  e.tokens = tokens;
  e.dout = dout;
  e.dout_dtype = dout_dtype;
  // The fp32 gradients: the lookup's backward adds in fp32 (in fp16, the output projection's
  // share of the embedding's gradient arrives through the fp16 one, drained into it).
  e.dtable = training_->master_grad("embed.weight");
  if (c.learned_positions) e.dpos_table = training_->master_grad("pos_embed.weight");
  e.scratch = pool_->write(
      "grad.embed_scratch." + std::to_string(len),
      ops::embedding_backward_scratch_bytes(uint32_t(c.vocab_size), uint32_t(c.max_len), count) /
              4 +
          1);
  e.step = scalars_;
  e.tokens_count = count;
  e.d = uint32_t(c.d_model);
  e.vocab = uint32_t(c.vocab_size);
  e.len = len;
  e.max_len = uint32_t(c.max_len);
  e.pad_id = c.pad_id;
  e.scale = std::sqrt(float(c.d_model));
  e.dropout = options_.dropout ? c.dropout : 0.0f;
  e.tensor_id = tensor_id;
  ops::embedding_backward(dev_, rec, e);
}

}  // namespace vkf::model
