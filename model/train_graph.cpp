#include "model/train_graph.h"

#include <cmath>
#include <cstring>
#include <map>

#include "engine/error.h"
#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/basic.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"
#include "engine/ops/loss.h"
#include "engine/ops/matmul.h"

namespace vkf::model {

namespace {

struct Dims {
  uint32_t B, Ls, Lt, d, H, dk, dv, dff, V;
  uint32_t Ns() const { return B * Ls; }
  uint32_t Nt() const { return B * Lt; }
};

}  // namespace

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
      pool_(options.pool ? options.pool : std::make_shared<ActivationPool>(dev)) {
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

BufferRef TrainGraph::grad(const std::string& name) const {
  return training_->grad(name);
}

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
  Segment seg{rec.cut(), {}};
  const auto& params = params_.layout().params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (final_[i] || params[i].name.compare(0, prefix.size(), prefix) != 0) continue;
    final_[i] = true;
    // Padding up to the next tensor belongs to this one, so ranges tile the flat buffer.
    const uint64_t first = params[i].offset, end = i + 1 < params.size()
                                                       ? params[i + 1].offset
                                                       : params_.layout().total_floats();
    if (!seg.final_ranges.empty() && seg.final_ranges.back().second == first)
      seg.final_ranges.back().second = end;
    else
      seg.final_ranges.emplace_back(first, end);
  }
  segments_.push_back(std::move(seg));
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

  const BufferRef memory = encoder_forward(f, src, src_len, B, Ls);

  // Decoder.
  BufferRef y = b.write("dec.embed", uint64_t{Nt} * d);
  embed(f, tgt_in, Nt, Lt, BufferRef{}, y, dropout_id(true, 0, 15));
  for (int l = 0; l < c.decoder_layers; ++l) {
    const std::string n = "dec." + std::to_string(l), p = "decoder.layers." + std::to_string(l);
    BufferRef s1 = b.write(n + ".s1", uint64_t{Nt} * d), y1 = b.write(n + ".y1", uint64_t{Nt} * d);
    mha(f, n + ".self", p + ".self_attn", y, y, B, Lt, Lt, tgt_len, true, s1,
        dropout_id(true, l, 0));
    add_norm(f, n + ".ln1", p + ".self_attn_norm", y, s1, y1, Nt, Lt, dropout_id(true, l, 1));
    BufferRef s2 = b.write(n + ".s2", uint64_t{Nt} * d), y2 = b.write(n + ".y2", uint64_t{Nt} * d);
    mha(f, n + ".cross", p + ".cross_attn", y1, memory, B, Lt, Ls, src_len, false, s2,
        dropout_id(true, l, 2));
    add_norm(f, n + ".ln2", p + ".cross_attn_norm", y1, s2, y2, Nt, Lt, dropout_id(true, l, 3));
    BufferRef s3 = b.write(n + ".s3", uint64_t{Nt} * d), y3 = b.write(n + ".y3", uint64_t{Nt} * d);
    ffn(f, n + ".ffn", p + ".ffn", y2, s3, Nt);
    add_norm(f, n + ".ln3", p + ".ffn_norm", y2, s3, y3, Nt, Lt, dropout_id(true, l, 4));
    y = y3;
  }

  // Output projection with the shared embedding: logits[Nt, V] = y E^T.
  BufferRef logits = b.write("logits", uint64_t{Nt} * V);
  ops::MatmulArgs proj;
  proj.a = y;
  proj.b = params_.param("embed.weight");
  proj.c = logits;
  proj.m = Nt;
  proj.n = V;
  proj.k = d;
  proj.trans_b = true;
  ops::matmul(dev_, rec, proj);

  record_loss(rec, logits, tgt_out, Nt);
}

void TrainGraph::record_loss(Recorder& rec, const BufferRef& logits, const BufferRef& targets,
                             uint32_t rows) {
  ops::CrossEntropyArgs a;
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

void TrainGraph::record_backward(Recorder& rec) {
  const ModelConfig& c = config_;
  const Dims D{shape_.batch,
               shape_.src_len,
               shape_.tgt_len,
               uint32_t(c.d_model),
               uint32_t(c.heads),
               uint32_t(c.head_dim_k()),
               uint32_t(c.head_dim_v()),
               uint32_t(c.d_ff),
               uint32_t(c.vocab_size)};
  ActivationPool& b = *pool_;
  const float drop = options_.dropout ? c.dropout : 0.0f;
  const float attn_drop = options_.dropout ? c.attention_dropout : 0.0f;
  const uint32_t Ns = D.Ns(), Nt = D.Nt(), Nmax = std::max(Ns, Nt);
  const BufferRef src = io_.src, tgt_in = io_.tgt_in, src_len = io_.src_len, tgt_len = io_.tgt_len;

  BufferRef ones = b.write("ones", Nmax);
  ops::fill(dev_, rec, ones, Nmax, 1.0f);
  // Activation-gradient temporaries, reused layer after layer (the recorder orders them).
  const uint64_t wide = uint64_t{Nmax} * std::max({D.d, D.H * D.dk, D.H * D.dv});
  BufferRef g_out = b.write("grad.out", wide), g_a = b.write("grad.a", wide),
            g_b = b.write("grad.b", wide);
  BufferRef g_ff = b.write("grad.ff", uint64_t{Nmax} * D.dff);
  BufferRef g_q = b.write("grad.q", uint64_t{Nmax} * D.H * D.dk);
  BufferRef g_k = b.write("grad.k", uint64_t{Nmax} * D.H * D.dk);
  BufferRef g_v = b.write("grad.v", uint64_t{Nmax} * D.H * D.dv);
  BufferRef g_o = b.write("grad.o", uint64_t{Nmax} * D.H * D.dv);
  BufferRef g_memory = b.write("grad.memory", uint64_t{Ns} * D.d);
  BufferRef delta = b.write("grad.delta", uint64_t{D.B} * D.H * std::max(D.Ls, D.Lt));
  BufferRef ln_scratch =
      b.write("grad.ln_scratch", ops::layer_norm_backward_scratch_bytes(Nmax, D.d) / 4 + 1);
  auto rows_d = [&](const BufferRef& r, uint32_t rows) {
    return r.slice(0, uint64_t{rows} * D.d * 4);
  };

  auto norm_backward = [&](const std::string& name, const std::string& norm, const BufferRef& dy,
                           const BufferRef& dx, const BufferRef& ds, uint32_t rows, uint32_t len,
                           uint32_t id) {
    ops::LayerNormBackwardArgs a;
    a.dy = dy;
    a.h = b.read(name + ".h", uint64_t{rows} * D.d);
    a.gamma = params_.param(norm + ".weight");
    a.mean = b.read(name + ".mean", rows);
    a.rstd = b.read(name + ".rstd", rows);
    a.dx = dx;
    a.ds = ds;
    a.dgamma = grad(norm + ".weight");
    a.dbeta = grad(norm + ".bias");
    a.scratch = ln_scratch;
    a.step = scalars_;
    a.rows = rows;
    a.d = D.d;
    a.dropout = drop;
    a.tensor_id = id;
    a.batch_row_rows = len;
    a.accumulate_params = true;
    ops::layer_norm_backward(dev_, rec, a);
  };
  auto lin_back = [&](const std::string& prefix, uint32_t in, uint32_t out, const BufferRef& x,
                      const BufferRef& dy, const BufferRef& dx, bool accumulate, uint32_t rows) {
    linear_backward(dev_, rec, linear_of(params_, prefix, in, out), x, dy, dx, accumulate,
                    grad(prefix + ".weight"), grad(prefix + ".bias"),
                    ones.slice(0, uint64_t{rows} * 4), rows);
  };
  // Backward of mha(): ds_out is the gradient of its o_proj output; adds the gradient w.r.t.
  // xq into dxq and w.r.t. xkv into dxkv (which may be the same buffer for self-attention).
  auto mha_backward = [&](const std::string& name, const std::string& prefix, const BufferRef& xq,
                          const BufferRef& xkv, uint32_t Lq, uint32_t Lk, const BufferRef& key_len,
                          bool causal, const BufferRef& ds_out, const BufferRef& dxq,
                          const BufferRef& dxkv, bool accumulate_kv, uint32_t id) {
    const uint32_t nq = D.B * Lq, nk = D.B * Lk;
    BufferRef q = b.read(name + ".q", uint64_t{nq} * D.H * D.dk);
    BufferRef k = b.read(name + ".k", uint64_t{nk} * D.H * D.dk);
    BufferRef v = b.read(name + ".v", uint64_t{nk} * D.H * D.dv);
    BufferRef o = b.read(name + ".o", uint64_t{nq} * D.H * D.dv);
    BufferRef dq = g_q.slice(0, uint64_t{nq} * D.H * D.dk * 4);
    BufferRef dk = g_k.slice(0, uint64_t{nk} * D.H * D.dk * 4);
    BufferRef dv = g_v.slice(0, uint64_t{nk} * D.H * D.dv * 4);
    BufferRef d_o = g_o.slice(0, uint64_t{nq} * D.H * D.dv * 4);
    lin_back(prefix + ".o_proj", D.H * D.dv, D.d, o, ds_out, d_o, false, nq);
    ops::AttentionBackwardArgs a;
    a.fwd.batch = D.B;
    a.fwd.heads = D.H;
    a.fwd.len_q = Lq;
    a.fwd.len_k = Lk;
    a.fwd.d_k = D.dk;
    a.fwd.d_v = D.dv;
    a.fwd.q = q;
    a.fwd.k = k;
    a.fwd.v = v;
    a.fwd.o = o;
    a.fwd.q_layout = heads_layout(Lq, D.H, D.dk);
    a.fwd.k_layout = heads_layout(Lk, D.H, D.dk);
    a.fwd.v_layout = heads_layout(Lk, D.H, D.dv);
    a.fwd.o_layout = heads_layout(Lq, D.H, D.dv);
    a.fwd.lse = b.read(name + ".lse", uint64_t{D.B} * D.H * Lq);
    a.fwd.key_len = key_len;
    a.fwd.causal = causal;
    a.fwd.dropout_p = attn_drop;
    a.fwd.dropout_tensor = id;
    a.fwd.scalars = scalars_;
    a.d_o = d_o;
    a.d_q = dq;
    a.d_k = dk;
    a.d_v = dv;
    a.delta = delta.slice(0, uint64_t{D.B} * D.H * Lq * 4);
    ops::attention_backward(dev_, rec, a);
    lin_back(prefix + ".q_proj", D.d, D.H * D.dk, xq, dq, dxq, true, nq);
    lin_back(prefix + ".k_proj", D.d, D.H * D.dk, xkv, dk, dxkv, accumulate_kv, nk);
    lin_back(prefix + ".v_proj", D.d, D.H * D.dv, xkv, dv, dxkv, true, nk);
  };
  auto ffn_backward = [&](const std::string& name, const std::string& prefix, const BufferRef& x,
                          const BufferRef& ds_out, const BufferRef& dx, uint32_t rows) {
    BufferRef f = b.read(name + ".f", uint64_t{rows} * D.dff);
    BufferRef df = g_ff.slice(0, uint64_t{rows} * D.dff * 4);
    lin_back(prefix + ".fc2", D.dff, D.d, f, ds_out, df, false, rows);
    ops::relu_backward(dev_, rec, f, df, rows * D.dff);
    lin_back(prefix + ".fc1", D.d, D.dff, x, df, dx, true, rows);
  };

  // Output projection: dy = dlogits E, dE += dlogits^T y.
  BufferRef dlogits = b.read("logits", uint64_t{Nt} * D.V);
  const std::string last_dec = "dec." + std::to_string(c.decoder_layers - 1);
  BufferRef y_final = b.read(last_dec + ".y3", uint64_t{Nt} * D.d);
  BufferRef gy = rows_d(g_out, Nt);
  {
    ops::MatmulArgs gx;
    gx.a = dlogits;
    gx.b = params_.param("embed.weight");
    gx.c = gy;
    gx.m = Nt;
    gx.n = D.d;
    gx.k = D.V;
    ops::matmul(dev_, rec, gx);
    ops::MatmulArgs gw;
    gw.a = dlogits;
    gw.trans_a = true;
    gw.b = y_final;
    gw.c = grad("embed.weight");
    gw.m = D.V;
    gw.n = D.d;
    gw.k = Nt;
    gw.beta = 1.0f;
    ops::matmul(dev_, rec, gw);
  }

  // Decoder layers, last to first. gy holds the gradient of the layer's output.
  const std::string last_enc = "enc." + std::to_string(c.encoder_layers - 1);
  const BufferRef memory = b.read(last_enc + ".x2", uint64_t{Ns} * D.d);
  rec.fill(g_memory, 0);
  BufferRef ga = rows_d(g_a, Nt), gb = rows_d(g_b, Nt);
  for (int l = c.decoder_layers - 1; l >= 0; --l) {
    const std::string n = "dec." + std::to_string(l), p = "decoder.layers." + std::to_string(l);
    const BufferRef y_in = l == 0
                               ? b.read("dec.embed", uint64_t{Nt} * D.d)
                               : b.read("dec." + std::to_string(l - 1) + ".y3", uint64_t{Nt} * D.d);
    const BufferRef y1 = b.read(n + ".y1", uint64_t{Nt} * D.d),
                    y2 = b.read(n + ".y2", uint64_t{Nt} * D.d);
    norm_backward(n + ".ln3", p + ".ffn_norm", gy, ga, gb, Nt, D.Lt, dropout_id(true, l, 4));
    ffn_backward(n + ".ffn", p + ".ffn", y2, gb, ga, Nt);  // ga: gradient of y2
    norm_backward(n + ".ln2", p + ".cross_attn_norm", ga, gy, gb, Nt, D.Lt, dropout_id(true, l, 3));
    mha_backward(n + ".cross", p + ".cross_attn", y1, memory, D.Lt, D.Ls, src_len, false, gb, gy,
                 g_memory, true, dropout_id(true, l, 2));  // gy: gradient of y1
    norm_backward(n + ".ln1", p + ".self_attn_norm", gy, ga, gb, Nt, D.Lt, dropout_id(true, l, 1));
    mha_backward(n + ".self", p + ".self_attn", y_in, y_in, D.Lt, D.Lt, tgt_len, true, gb, ga, ga,
                 true, dropout_id(true, l, 0));  // ga: gradient of y_in
    std::swap(gy, ga);
    end_segment(rec, p + ".");
  }
  embedding_backward_into(rec, tgt_in, D.Lt, gy, dropout_id(true, 0, 15));

  // Encoder layers, last to first, starting from the gradient the decoder sent to the memory.
  BufferRef gx = rows_d(g_out, Ns);
  ga = rows_d(g_a, Ns);
  gb = rows_d(g_b, Ns);
  ops::CopyArgs cp;
  cp.src = g_memory;
  cp.dst = gx;
  cp.cols = Ns * D.d;
  ops::copy(dev_, rec, cp);
  for (int l = c.encoder_layers - 1; l >= 0; --l) {
    const std::string n = "enc." + std::to_string(l), p = "encoder.layers." + std::to_string(l);
    const BufferRef x_in = l == 0
                               ? b.read("enc.embed", uint64_t{Ns} * D.d)
                               : b.read("enc." + std::to_string(l - 1) + ".x2", uint64_t{Ns} * D.d);
    const BufferRef x1 = b.read(n + ".x1", uint64_t{Ns} * D.d);
    norm_backward(n + ".ln2", p + ".ffn_norm", gx, ga, gb, Ns, D.Ls, dropout_id(false, l, 2));
    ffn_backward(n + ".ffn", p + ".ffn", x1, gb, ga, Ns);  // ga: gradient of x1
    norm_backward(n + ".ln1", p + ".self_attn_norm", ga, gx, gb, Ns, D.Ls, dropout_id(false, l, 1));
    mha_backward(n + ".self", p + ".self_attn", x_in, x_in, D.Ls, D.Ls, src_len, false, gb, gx, gx,
                 true, dropout_id(false, l, 0));  // gx: gradient of x_in
    end_segment(rec, p + ".");
  }
  embedding_backward_into(rec, src, D.Ls, gx, dropout_id(false, 0, 15));
}

void TrainGraph::embedding_backward_into(Recorder& rec, const BufferRef& tokens, uint32_t len,
                                         const BufferRef& dout, uint32_t tensor_id) {
  const ModelConfig& c = config_;
  const uint32_t count = shape_.batch * len;
  ops::EmbeddingBackwardArgs e;
  e.tokens = tokens;
  e.dout = dout;
  e.dtable = grad("embed.weight");
  if (c.learned_positions) e.dpos_table = grad("pos_embed.weight");
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
