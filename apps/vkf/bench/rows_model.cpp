// Whole-model rows: one training step (forward, label-smoothed loss, backward, Adam) of the
// tiny, small and base presets, and one decoder step of beam search. Each is checked at a small
// batch of the same model on the same device: the training step's loss against the
// double-precision reference forward (reference/transformer.h) and its gradient along a
// random direction against central differences of that reference; the decoder step's
// candidates and their log-probabilities against the reference's log-softmax.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "apps/vkf/bench/check.h"
#include "apps/vkf/bench/rows.h"
#include "engine/step_scalars.h"
#include "model/decode/graph.h"
#include "model/device_params.h"
#include "model/optimizer.h"
#include "model/params.h"
#include "model/train_graph.h"
#include "reference/transformer.h"

namespace vkf::bench {
namespace {

using model::ModelConfig;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ModelConfig config_of(const std::string& preset) {
  ModelConfig c = ModelConfig::preset(preset);
  c.vocab_size = int(k_train_vocab);
  return c;
}

// FLOPs of the matmuls and attention products of one layer stack pass (multiply-add = 2).
struct Dims {
  double d, f, qk, v, V;
  double enc, dec;
  explicit Dims(const ModelConfig& c)
      : d(c.d_model),
        f(c.d_ff),
        qk(double(c.heads) * c.head_dim_k()),
        v(double(c.heads) * c.head_dim_v()),
        V(c.vocab_size),
        enc(c.encoder_layers),
        dec(c.decoder_layers) {}
  double projections() const { return 2 * (2 * d * qk + 2 * d * v); }  // q, k, v, o
  double ffn() const { return 4 * d * f; }
  double attend(double keys) const { return 2 * keys * (qk + v); }
};

// Forward FLOPs of a batch of sentences with `src` and `tgt` tokens each.
double forward_flops(const ModelConfig& c, double sentences, double src, double tgt) {
  const Dims m(c);
  const double enc = src * (m.projections() + m.ffn() + m.attend(src));
  const double cross = 2 * m.d * m.qk + 2 * m.d * m.v;  // its query and output projections
  const double dec = tgt * (m.projections() + m.attend(tgt) + cross + m.attend(src) + m.ffn()) +
                     src * 2 * m.d * (m.qk + m.v);  // cross-attention keys and values
  return sentences * (m.enc * enc + m.dec * dec + tgt * 2 * m.d * m.V);
}

// One decoder step for `rows` hypotheses at position t (t + 1 cached keys).
double decode_step_flops(const ModelConfig& c, double rows, double t, double src) {
  const Dims m(c);
  const double layer =
      m.projections() + m.attend(t + 1) + 2 * m.d * m.qk + 2 * m.d * m.v + m.attend(src) + m.ffn();
  return rows * (m.dec * layer + 2 * m.d * m.V);
}

std::unique_ptr<model::DeviceParams> device_params(Device& dev, const ModelConfig& c) {
  try {
    return std::make_unique<model::DeviceParams>(dev, c);
  } catch (const Error& e) {
    throw Refused(std::string("cannot hold the parameters: ") + e.what());
  }
}

// Random parameters with every bias and gain moved off its symmetric start, so that their
// gradients are exercised too.
std::vector<float> random_parameters(const model::ParamLayout& layout, const ModelConfig& c,
                                     std::mt19937& rng) {
  std::vector<float> flat = model::init_parameters(layout, c, 1);
  std::uniform_real_distribution<float> jitter(-0.05f, 0.05f);
  for (float& v : flat) v += jitter(rng);
  return flat;
}

Buffer step_scalars(Device& dev) {
  Buffer b = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.seed = 1234;
  std::memcpy(b.mapped(), &st, sizeof st);
  return b;
}

std::vector<int32_t> random_tokens(std::mt19937& rng, const ModelConfig& c, size_t n) {
  std::uniform_int_distribution<int> tok(4, c.vocab_size - 1);
  std::vector<int32_t> v(n);
  for (auto& t : v) t = tok(rng);
  return v;
}

// The training step at 2 sentences (sources of 7 and 4 tokens, targets of 6 and 3), dropout
// off: the loss, and the gradient along a random unit direction u, g . u against
// (L(p + h u) - L(p - h u)) / 2h of the reference.
void check_training(Context& cx, Row& row, model::DeviceParams& params,
                    const std::vector<float>& flat) {
  Device& dev = cx.dev;
  const ModelConfig& c = params.config();
  const model::BucketShape shape{2, 7, 6};
  const int src_len[2] = {7, 4}, tgt_len[2] = {6, 3};
  model::BatchTokens b;
  b.src.assign(14, c.pad_id);
  b.tgt_in.assign(12, c.pad_id);
  b.tgt_out.assign(12, c.pad_id);
  for (uint32_t r = 0; r < 2; ++r) {
    const auto s = random_tokens(cx.rng, c, size_t(src_len[r] - 1));
    std::copy(s.begin(), s.end(), b.src.begin() + r * 7);
    b.src[r * 7 + uint32_t(src_len[r]) - 1] = c.eos_id;
    const auto t = random_tokens(cx.rng, c, size_t(tgt_len[r] - 1));
    b.tgt_in[r * 6] = c.bos_id;
    for (size_t i = 0; i < t.size(); ++i) {
      b.tgt_out[r * 6 + i] = t[i];
      b.tgt_in[r * 6 + i + 1] = t[i];
    }
    b.tgt_out[r * 6 + uint32_t(tgt_len[r]) - 1] = c.eos_id;
    b.src_len.push_back(src_len[r]);
    b.tgt_len.push_back(tgt_len[r]);
  }
  params.zero_state();
  Buffer scalars = step_scalars(dev);
  model::TrainGraph graph(dev, params, shape, scalars, {.backward = true, .dropout = false});
  graph.set_batch(b);
  const model::StepResult got = graph.run();
  const model::ParamLayout& layout = params.layout();
  if (cx.sabotage(row.id)) {  // a wrong gradient element, as a faulty backward kernel leaves
    Recorder rec(dev);
    rec.fill(params.grad(layout.params()[0].name).slice(0, 4), k_wrong_bits);
    rec.finish().run();
  }
  const std::vector<float> grads = params.download_grads();

  std::vector<double> p(flat.begin(), flat.end()), u(flat.size(), 0.0);
  std::uniform_real_distribution<double> dir(-1.0, 1.0);
  double norm = 0;
  for (const model::ParamInfo& info : layout.params())
    for (int64_t i = 0; i < info.numel(); ++i) {
      double& x = u[info.offset + uint64_t(i)];
      x = i == 0 ? 1.0 : dir(cx.rng);  // each tensor's first element fully in the direction
      norm += x * x;
    }
  double along = 0, scale = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    u[i] /= std::sqrt(norm);
    along += double(grads[i]) * u[i];
    scale += std::fabs(double(grads[i]) * u[i]);
  }
  const ref::TransformerBatch rb{2, 7, 6, b.src, b.tgt_in, b.tgt_out};
  const double loss = ref::transformer_forward(c, layout, p, rb).loss;
  const double h = 1e-3;
  auto loss_at = [&](double step) {
    std::vector<double> q(p);
    for (size_t i = 0; i < q.size(); ++i) q[i] += step * u[i];
    return ref::transformer_forward(c, layout, q, rb).loss;
  };
  const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
  Comparison cl("loss"), cg("gradient along a random direction");
  cl.add(got.loss_sum, loss, loss, 1e-5, 1e-4);
  cg.add(along, fd, scale, 1e-6, 2e-3);
  set_check(row, {cl, cg}, "2 sentences of the same model, dropout off");
}

void train_row(Context& cx, Row& row, const std::string& preset) {
  Device& dev = cx.dev;
  const ModelConfig c = config_of(preset);
  auto params = device_params(dev, c);
  const std::vector<float> flat = random_parameters(params->layout(), c, cx.rng);
  params->upload(flat);
  check_training(cx, row, *params, flat);

  const uint32_t len = k_train_len,
                 batch = std::max(
                     1u, train_tokens(preset, dev.info().is_cpu(), cx.options.suite) / len);
  Buffer scalars = step_scalars(dev);
  auto* sc = reinterpret_cast<StepScalars*>(scalars.mapped());
  auto pool = std::make_shared<model::ActivationPool>(dev);
  model::TrainGraph graph(dev, *params, {batch, len, len}, scalars.ref(),
                          {.backward = true, .dropout = true, .pool = pool});
  ops::AdamOptions adam;
  adam.d_model = float(c.d_model);
  model::Optimizer optimizer(dev, *params, scalars.ref(), adam);
  model::BatchTokens b;
  for (auto* v : {&b.src, &b.tgt_in, &b.tgt_out})
    *v = random_tokens(cx.rng, c, size_t{batch} * len);
  b.src_len.assign(batch, int32_t(len));
  b.tgt_len.assign(batch, int32_t(len));
  graph.set_batch(b);
  uint32_t step = 1;
  auto one_step = [&] {  // host clock: the whole step, submits and waits included
    const auto t0 = std::chrono::steady_clock::now();
    sc->step = step++;
    sc->grad_scale = 1.0f;
    const model::StepResult r = graph.run();
    sc->grad_scale = 1.0f / float(r.tokens);
    optimizer.step();
    return seconds_since(t0);
  };
  const double first = one_step();  // warm-up: pipelines compiled, memory touched
  Timing t;
  for (int i = 0; i < cx.repeats(first); ++i) t.seconds.push_back(one_step());
  const double tokens = 2.0 * batch * len;  // source + target tokens
  set_timing(row, cx, t, tokens, "tokens/s", Basis::fp32_fma,
             3 * forward_flops(c, batch, len, len));
}

// One decoder step of 4 hypotheses of one sentence (source of 5 tokens + EOS), each forced
// along its own random target for 4 positions: every step's candidates are the best tokens of
// the reference's log-softmax at that position, with its log-probabilities.
void check_decoding(Context& cx, Row& row, model::DeviceParams& params,
                    const std::vector<float>& flat) {
  Device& dev = cx.dev;
  const ModelConfig& c = params.config();
  const uint32_t beam = k_decode_beam, positions = 4, src_len = 6, cand = 2 * beam + 2;
  model::decode::DecodeShape shape{
      .batch = 1, .beam = beam, .src_len = src_len, .max_out = positions, .candidates = cand};
  model::decode::DecodeGraph graph(dev, params, shape);
  std::vector<int32_t> src = random_tokens(cx.rng, c, src_len - 1);
  src.push_back(c.eos_id);
  std::vector<std::vector<int32_t>> seq(beam);
  for (auto& s : seq) s = random_tokens(cx.rng, c, positions);
  // A wrong weight, as a faulty kernel would leave it: a bias added to the residual stream of
  // every position, since the ReLU behind a wrong fc1 weight can hide it for every row.
  if (cx.sabotage(row.id)) {
    Recorder rec(dev);
    rec.fill(params.param("decoder.layers.0.ffn.fc2.bias").slice(0, 4), k_wrong_bits);
    rec.finish().run();
  }
  graph.encode(src, std::vector<int32_t>{int32_t(src_len)});
  std::vector<std::vector<float>> logp(positions);
  std::vector<std::vector<uint32_t>> token(positions);
  for (uint32_t t = 0; t < positions; ++t) {
    std::vector<int32_t> in(beam);
    for (uint32_t r = 0; r < beam; ++r) in[r] = t == 0 ? c.bos_id : seq[r][t - 1];
    graph.step(t, in);
    logp[t].assign(graph.logp().begin(), graph.logp().end());
    token[t].assign(graph.token().begin(), graph.token().end());
  }
  if (cx.sabotage(row.id)) params.upload(flat);  // the timed graph gets the right weights

  ref::TransformerBatch rb{int(beam), int(src_len), int(positions), {}, {}, {}};
  for (uint32_t r = 0; r < beam; ++r) {
    rb.src.insert(rb.src.end(), src.begin(), src.end());
    rb.tgt_in.push_back(c.bos_id);
    rb.tgt_in.insert(rb.tgt_in.end(), seq[r].begin(), seq[r].end() - 1);
    rb.tgt_out.insert(rb.tgt_out.end(), seq[r].begin(), seq[r].end());
  }
  const std::vector<double> p(flat.begin(), flat.end());
  const ref::TransformerOutput want = ref::transformer_forward(c, params.layout(), p, rb);
  const size_t V = size_t(c.vocab_size);
  Comparison cp("candidate log-probabilities"), ck("candidates' rank (reference log p over the "
                                                   "k-th best)");
  for (uint32_t r = 0; r < beam; ++r)
    for (uint32_t t = 0; t < positions; ++t) {
      const double* z = &want.logits[(size_t{r} * positions + t) * V];
      const double mx = *std::max_element(z, z + V);
      double sum = 0;
      for (size_t j = 0; j < V; ++j) sum += std::exp(z[j] - mx);
      std::vector<double> lp(V);
      for (size_t j = 0; j < V; ++j) lp[j] = z[j] - mx - std::log(sum);
      std::vector<double> sorted(lp);
      std::nth_element(sorted.begin(), sorted.begin() + (cand - 1), sorted.end(),
                       std::greater<double>());
      const double kth = sorted[cand - 1];
      for (uint32_t i = 0; i < cand; ++i) {
        const uint32_t tok = token[t][size_t{r} * cand + i];
        const double want_lp = tok < V ? lp[tok] : -INFINITY;
        cp.add(logp[t][size_t{r} * cand + i], want_lp, want_lp, 1e-3, 1e-4);
        // A candidate must be among the best: its reference log p at least the k-th best's
        // (ties within the tolerance).
        ck.add(std::min(want_lp, kth), kth, kth, 1e-3, 1e-4);
      }
    }
  set_check(row, {cp, ck},
            "beam 4 x 1 sentence of the same model, 4 positions forced along random targets");
}

void decode_row(Context& cx, Row& row, const std::string& preset) {
  Device& dev = cx.dev;
  const ModelConfig c = config_of(preset);
  auto params = device_params(dev, c);
  const std::vector<float> flat = random_parameters(params->layout(), c, cx.rng);
  params->upload(flat);
  check_decoding(cx, row, *params, flat);

  const uint32_t batch = k_decode_batch, beam = k_decode_beam, positions = k_decode_positions;
  model::decode::DecodeShape shape{.batch = batch,
                                   .beam = beam,
                                   .src_len = k_decode_src_len,
                                   .max_out = positions,
                                   .candidates = 2 * beam + 2};
  const bool stamps = timed_by_timestamps(dev);
  model::decode::DecodeGraph graph(dev, *params, shape, stamps);
  std::vector<int32_t> src = random_tokens(cx.rng, c, size_t{batch} * k_decode_src_len);
  for (uint32_t b = 0; b < batch; ++b) src[(b + 1) * k_decode_src_len - 1] = c.eos_id;
  const std::vector<int32_t> lens(batch, int32_t(k_decode_src_len));
  // One sentence's decoding: every position, each row fed its own best candidate of the step
  // before (the work of a beam step; the beams' reordering is the search's, on the host).
  auto decode = [&](std::vector<double>* step_seconds) {
    graph.encode(src, lens);
    std::vector<int32_t> in(shape.rows(), c.bos_id);
    for (uint32_t t = 0; t < positions; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      graph.step(t, in);
      double s = seconds_since(t0);
      if (stamps) {
        double ms = 0;
        for (const KernelTiming& k : graph.last_step_timings()) ms += k.milliseconds;
        s = ms * 1e-3;
      }
      if (step_seconds) step_seconds->push_back(s);
      for (uint32_t r = 0; r < shape.rows(); ++r)
        in[r] = int32_t(graph.token()[size_t{r} * shape.candidates]);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  decode(nullptr);  // warm-up: pipelines compiled, memory touched
  const double first = seconds_since(t0);
  Timing t;
  t.timestamps = stamps;
  for (int i = 0; i < cx.repeats(first); ++i) decode(&t.seconds);
  set_timing(row, cx, t, shape.rows(), "tokens/s", Basis::fp32_fma,
             decode_step_flops(c, shape.rows(), (positions - 1) / 2.0, k_decode_src_len));
}

}  // namespace

std::vector<RowSpec> model_rows(Suite suite) {
  std::vector<RowSpec> rows;
  std::vector<std::string> train = {"tiny"}, decode = {"tiny"};
  if (suite != Suite::quick) train = {"tiny", "small", "base"}, decode = {"tiny", "base"};
  for (const std::string& p : train) {
    const std::string tokens = suite == Suite::quick ? "1024"
                               : p == "base"         ? "4096 (1024 on CPU devices)"
                                                     : "4096";
    // The quick suite's smaller batch is another row (ids join rows across result files).
    rows.push_back({"train/" + p + (suite == Suite::quick ? "/1024" : ""), "train",
                    "training step, " + p + " preset, " + tokens + " tokens a side, vocabulary " +
                        std::to_string(k_train_vocab),
                    [p](Context& cx, Row& r) { train_row(cx, r, p); }});
  }
  for (const std::string& p : decode)
    rows.push_back({"decode/" + p, "decode",
                    "decoder step, " + p + " preset, beam 4 x 32 sentences (a step's tokens/s)",
                    [p](Context& cx, Row& r) { decode_row(cx, r, p); }});
  return rows;
}

}  // namespace vkf::bench
