// On-device incremental decoding and search (model/decode/) on tiny random models: the step's
// log-probabilities against the training graph's full forward, beam reordering of the K/V caches,
// beam 1 against greedy, beam search against exhaustive search, batched against one by one,
// n-best order, and the text layer (tokenizer next to the checkpoint, invalid UTF-8 lines).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "engine/error.h"
#include "engine/ops/matmul_choice.h"
#include "engine/step_scalars.h"
#include "engine/tuning.h"
#include "model/checkpoint.h"
#include "model/decode/graph.h"
#include "model/decode/search.h"
#include "model/decode/text.h"
#include "model/decode/translator.h"
#include "model/loaded_model.h"
#include "model/train_graph.h"
#include "tests/model/fixtures/data_fixture.h"
#include "tests/support/f16_storage.h"
#include "tests/support/vk_test.h"

using namespace vkf;
using namespace vkf::model;
using namespace vkf::model::decode;

namespace {

ModelConfig tiny_config(int vocab) {
  ModelConfig c;
  c.d_model = 32;
  c.d_ff = 64;
  c.heads = 4;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.vocab_size = vocab;
  c.max_len = 40;
  c.dropout = 0.0f;
  c.label_smoothing = 0.0f;
  return c;
}

// Random parameters with the embeddings scaled up, so next-token distributions are peaked and
// searches have clear winners.
void upload_random(DeviceWeights& params, uint64_t seed) {
  auto flat = init_parameters(params.layout(), params.config(), seed);
  const auto& e = params.layout().at("embed.weight");
  for (int64_t i = 0; i < e.numel(); ++i) flat[e.offset + uint64_t(i)] *= 3.0f;
  params.upload(flat);
}

std::vector<int32_t> random_tokens(std::mt19937& rng, const ModelConfig& c, int n) {
  std::uniform_int_distribution<int> tok(4, c.vocab_size - 1);
  std::vector<int32_t> v(size_t(std::max(n, 0)));
  for (auto& t : v) t = tok(rng);
  return v;
}

// Summed log p(target) per row from the training graph (teacher forced, no dropout, no
// smoothing). targets end with EOS unless truncated.
std::vector<double> full_forward_logprob(Device& dev, DeviceParams& params,
                                         const std::vector<std::vector<int32_t>>& src,
                                         const std::vector<std::vector<int32_t>>& targets) {
  const ModelConfig& c = params.config();
  uint32_t Ls = 1, Lt = 1;
  for (auto& s : src) Ls = std::max<uint32_t>(Ls, uint32_t(s.size()));
  for (auto& t : targets) Lt = std::max<uint32_t>(Lt, uint32_t(t.size()));
  const uint32_t B = uint32_t(src.size());
  BucketShape shape{B, Ls, Lt};
  BatchTokens b;
  b.src.assign(size_t{B} * Ls, c.pad_id);
  b.tgt_in.assign(size_t{B} * Lt, c.pad_id);
  b.tgt_out.assign(size_t{B} * Lt, c.pad_id);
  for (uint32_t r = 0; r < B; ++r) {
    std::copy(src[r].begin(), src[r].end(), b.src.begin() + r * Ls);
    for (size_t t = 0; t < targets[r].size(); ++t) {
      b.tgt_out[r * Lt + t] = targets[r][t];
      b.tgt_in[r * Lt + t] = t == 0 ? c.bos_id : targets[r][t - 1];
    }
    b.src_len.push_back(int32_t(src[r].size()));
    b.tgt_len.push_back(int32_t(targets[r].size()));
  }
  Buffer scalars = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars v;
  std::memcpy(scalars.mapped(), &v, sizeof v);
  TrainGraph graph(dev, params, shape, scalars, {.backward = false, .dropout = false});
  graph.set_batch(b);
  return graph.run().row_logprob;
}

// log p(token) in row r of the last step (candidates must cover the vocabulary).
double logp_of(const DecodeGraph& g, uint32_t r, int32_t token) {
  const uint32_t k = g.shape().candidates;
  for (uint32_t i = 0; i < k; ++i)
    if (int32_t(g.token()[size_t{r} * k + i]) == token) return g.logp()[size_t{r} * k + i];
  FAIL("token " << token << " not among row " << r << "'s candidates");
  return 0;
}

std::vector<int32_t> padded_source(const std::vector<std::vector<int32_t>>& src, uint32_t Ls,
                                   int32_t pad) {
  std::vector<int32_t> out(src.size() * Ls, pad);
  for (size_t b = 0; b < src.size(); ++b)
    std::copy(src[b].begin(), src[b].end(), out.begin() + b * Ls);
  return out;
}

}  // namespace

VKF_TEST_CASE("incremental decoding with reordered caches equals the full forward", "[decode]") {
  Device& dev = test::device();
  const ModelConfig c = tiny_config(20);
  DeviceParams params(dev, c);
  upload_random(params, 7);
  std::mt19937 rng(3);
  // Two sentences (sources of 5 and 3 tokens, EOS included), two rows each; every row is forced
  // along its own target sequence of 6 tokens (EOS included).
  std::vector<std::vector<int32_t>> src{random_tokens(rng, c, 4), random_tokens(rng, c, 2)};
  for (auto& s : src) s.push_back(c.eos_id);
  std::vector<std::vector<int32_t>> seq(4);
  for (auto& s : seq) {
    s = random_tokens(rng, c, 5);
    s.push_back(c.eos_id);
  }
  const uint32_t L = 6;
  DecodeShape shape{.batch = 2, .beam = 2, .src_len = 6, .max_out = 9, .candidates = 20};
  DecodeGraph g(dev, params, shape);
  g.encode(padded_source(src, 6, c.pad_id), std::vector<int32_t>{5, 3});

  // Rows swap the sequences they follow at odd steps (the caches are gathered across rows).
  std::vector<int> track{0, 1, 2, 3};
  std::vector<double> got(4, 0.0);
  for (uint32_t t = 0; t < L; ++t) {
    std::vector<int32_t> origin{0, 1, 2, 3};
    if (t % 2 == 1) {
      for (int r : {0, 2}) {
        std::swap(track[size_t(r)], track[size_t(r) + 1]);
        origin[size_t(r)] = r + 1;
        origin[size_t(r) + 1] = r;
      }
    }
    std::vector<int32_t> tokens(4);
    for (uint32_t r = 0; r < 4; ++r) tokens[r] = t == 0 ? c.bos_id : seq[size_t(track[r])][t - 1];
    g.step(t, tokens, origin);
    for (uint32_t r = 0; r < 4; ++r)
      got[size_t(track[r])] += logp_of(g, r, seq[size_t(track[r])][t]);
  }
  auto want = full_forward_logprob(dev, params, {src[0], src[0], src[1], src[1]}, seq);
  for (size_t i = 0; i < 4; ++i) {
    INFO("sequence " << i);
    CHECK(got[i] == Approx(want[i]).epsilon(1e-4).margin(1e-4));
  }

  // A beam collapse (both rows continue row 0) gives both rows row 0's distribution.
  g.encode(padded_source(src, 6, c.pad_id), std::vector<int32_t>{5, 3});
  for (uint32_t t = 0; t < 3; ++t) {
    std::vector<int32_t> origin{0, 1, 2, 3}, tokens(4);
    if (t == 2) origin = {0, 0, 2, 2};
    for (uint32_t r = 0; r < 4; ++r) tokens[r] = t == 0 ? c.bos_id : seq[origin[r]][t - 1];
    g.step(t, tokens, origin);
  }
  for (uint32_t i = 0; i < shape.candidates; ++i) {
    CHECK(g.token()[shape.candidates + i] == g.token()[i]);
    CHECK(g.logp()[shape.candidates + i] == Approx(g.logp()[i]).margin(1e-6));
  }
}

// Decoding gives its matmuls a split-k workspace (DecodeState::split_k): on a GPU, a step's few
// rows (beam x sentences) leave C with few tiles. A tuning that splits every forward class in
// three (MatmulConfig::split_k, as `vkf tune` writes where a split timed faster) makes every
// Linear and the output projection split, in the encoder pass and in the steps, reordered ones
// included, in fp32 and fp16: the log-probabilities are those of a device told never to split,
// up to the order of fp32 sums.
VKF_TEST_CASE("split-k matmuls decode what unsplit ones do", "[decode][split]") {
  ModelConfig c = tiny_config(20);
  c.d_model = 256;  // k of 256 and 512: slices of whole 256-byte runs in fp16 too
  c.d_ff = 512;
  std::vector<DType> dtypes{DType::f32};
  if (test::has_storage16()) dtypes.push_back(DType::f16);
  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  auto split = test::new_device();
  for (DType dtype : dtypes)
    for (uint32_t m : {16u, 128u, 1024u, 4096u})
      for (uint32_t n : {16u, 128u, 1024u, 4096u})
        for (uint32_t k : {16u, 128u, 1024u, 4096u}) {
          const ops::MatmulProblem p{dtype, false, true, m, n, k};
          ops::MatmulConfig cfg = ops::choose_matmul(split->info(), nullptr, p).config;
          cfg.split_k = 3;
          tuning->of<ops::MatmulFamily>()[ops::matmul_shape_class(p)] = cfg;
        }
  split->set_tuning(tuning);
  DeviceOptions never;
  never.ops.matmul_split_k = false;
  auto plain = test::new_device(never);

  std::mt19937 rng(9);
  std::vector<std::vector<int32_t>> src{random_tokens(rng, c, 5), random_tokens(rng, c, 2)};
  for (auto& s : src) s.push_back(c.eos_id);
  const std::vector<int32_t> tokens = random_tokens(rng, c, 4 * 4);
  const DecodeShape shape{.batch = 2, .beam = 2, .src_len = 6, .max_out = 8, .candidates = 20};
  // Every row's log p of every token at each of four steps (the last two reordered), and the
  // split reductions the steps ran.
  auto decode = [&](Device& dev, Precision precision, int* reductions) {
    DeviceWeights weights(dev, c, 0, precision);
    upload_random(weights, 13);
    DecodeGraph g(dev, weights, shape, true);
    g.encode(padded_source(src, 6, c.pad_id), std::vector<int32_t>{6, 3});
    std::vector<double> logp;
    *reductions = 0;
    for (uint32_t t = 0; t < 4; ++t) {
      std::vector<int32_t> step(tokens.begin() + t * 4, tokens.begin() + t * 4 + 4);
      if (t == 0) step.assign(4, c.bos_id);
      g.step(t, step, t < 2 ? std::vector<int32_t>{0, 1, 2, 3} : std::vector<int32_t>{1, 1, 3, 2});
      for (uint32_t r = 0; r < 4; ++r)
        for (int32_t tok = 0; tok < c.vocab_size; ++tok) logp.push_back(logp_of(g, r, tok));
      for (const KernelTiming& k : g.last_step_timings())
        if (k.name.rfind("matmul_split_reduce", 0) == 0) ++*reductions;
    }
    return logp;
  };
  for (DType dtype : dtypes) {
    const Precision precision = dtype == DType::f16 ? Precision::fp16 : Precision::fp32;
    INFO(precision_name(precision));
    int split_reductions = 0, plain_reductions = 1;
    const std::vector<double> got = decode(*split, precision, &split_reductions);
    const std::vector<double> want = decode(*plain, precision, &plain_reductions);
    CHECK(plain_reductions == 0);
    // Per step and layer: self-attention's four projections, cross-attention's query and output
    // ones and the feed-forward's two; then the vocabulary's.
    CHECK(split_reductions == 4 * (8 * c.decoder_layers + 1));
    REQUIRE(got.size() == want.size());
    // fp16 activations round each matmul's output to 11 bits, in whichever order it summed.
    const double margin = dtype == DType::f16 ? 2e-2 : 1e-5;
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("step " << i / 80 << ", row " << i / 20 % 4 << ", token " << i % 20);
      CHECK(got[i] == Approx(want[i]).margin(margin));
    }
  }
}

VKF_TEST_CASE("beam search with beam 1 equals greedy search", "[decode]") {
  Device& dev = test::device();
  const ModelConfig c = tiny_config(20);
  DeviceParams params(dev, c);
  upload_random(params, 11);
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> src;
  for (int n : {7, 1, 4}) {
    src.push_back(random_tokens(rng, c, n));
    src.back().push_back(c.eos_id);
  }
  const std::vector<uint32_t> max_out{12, 5, 9};
  DecodeShape shape{.batch = 3, .beam = 1, .src_len = 8, .max_out = 12, .candidates = 4};
  DecodeGraph g(dev, params, shape);
  const auto padded = padded_source(src, 8, c.pad_id);
  const std::vector<int32_t> lens{8, 2, 5};
  g.encode(padded, lens);
  auto greedy = greedy_search(g, c, max_out, 0.6f);
  g.encode(padded, lens);
  auto beam = beam_search(g, c, max_out, {.alpha = 0.6f, .nbest = 1});
  REQUIRE(beam.size() == 3);
  for (size_t b = 0; b < 3; ++b) {
    INFO("sentence " << b);
    REQUIRE(beam[b].size() == 1);
    CHECK(beam[b][0].tokens == greedy[b].tokens);
    CHECK(beam[b][0].eos == greedy[b].eos);
    CHECK(beam[b][0].score == Approx(greedy[b].score).epsilon(1e-9));
    CHECK(greedy[b].length() <= max_out[b]);
  }
}

VKF_TEST_CASE("beam search equals exhaustive search on a tiny vocabulary", "[decode]") {
  Device& dev = test::device();
  const ModelConfig c = tiny_config(7);  // pad, unk, bos, eos and three words
  DeviceParams params(dev, c);
  upload_random(params, 17);
  const float alpha = 0.6f;
  const uint32_t max_out = 3;
  std::vector<int32_t> src{4, 6, 5, c.eos_id};
  // Every output of at most 3 tokens: ending in EOS, or 3 tokens without EOS (the length cap).
  const std::vector<int32_t> words{c.unk_id, 4, 5, 6};
  std::vector<std::vector<int32_t>> outputs{{}};
  std::vector<std::vector<int32_t>> targets;
  std::vector<bool> eos;
  for (uint32_t len = 0; len <= max_out; ++len) {
    std::vector<std::vector<int32_t>> longer;
    for (auto& o : outputs) {
      if (len < max_out) {
        targets.push_back(o);
        targets.back().push_back(c.eos_id);
        eos.push_back(true);
      } else {
        targets.push_back(o);
        eos.push_back(false);
      }
      for (int32_t w : words) {
        longer.push_back(o);
        longer.back().push_back(w);
      }
    }
    outputs = longer;
  }
  REQUIRE(targets.size() == 85);
  auto logprob = full_forward_logprob(dev, params, std::vector(targets.size(), src), targets);
  std::vector<Hypothesis> all;
  for (size_t i = 0; i < targets.size(); ++i) {
    Hypothesis h;
    h.tokens = targets[i];
    if (eos[i]) h.tokens.pop_back();
    h.eos = eos[i];
    h.logprob = logprob[i];
    h.score = h.logprob / length_penalty(h.length(), alpha);
    all.push_back(h);
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });

  // A beam wider than the number of hypotheses keeps them all: the search is then exact.
  const uint32_t nbest = 8;
  DecodeShape shape{.batch = 1, .beam = 96, .src_len = 4, .max_out = max_out, .candidates = 7};
  DecodeGraph g(dev, params, shape);
  g.encode(src, std::vector<int32_t>{4});
  auto found = beam_search(g, c, std::vector<uint32_t>{max_out}, {.alpha = alpha, .nbest = nbest});
  REQUIRE(found.size() == 1);
  REQUIRE(found[0].size() == nbest);
  for (uint32_t i = 0; i < nbest; ++i) {
    INFO("rank " << i << ": beam " << found[0][i].score << ", exhaustive " << all[i].score);
    CHECK(found[0][i].score == Approx(all[i].score).epsilon(1e-4).margin(1e-4));
    CHECK(found[0][i].logprob == Approx(all[i].logprob).epsilon(1e-4).margin(1e-4));
    const bool clear = (i == 0 || all[i - 1].score - all[i].score > 1e-3) &&
                       all[i].score - all[i + 1].score > 1e-3;
    if (clear) {
      CHECK(found[0][i].tokens == all[i].tokens);
      CHECK(found[0][i].eos == all[i].eos);
    }
  }
}

VKF_TEST_CASE("batched translation equals one by one and n-best lists are sorted", "[decode]") {
  Device& dev = test::device();
  const ModelConfig c = tiny_config(20);
  DeviceParams params(dev, c);
  upload_random(params, 23);
  std::mt19937 rng(8);
  std::vector<std::vector<int32_t>> sources;
  for (int n : {5, 0, 9, 2, 7, 1, 3}) sources.push_back(random_tokens(rng, c, n));
  TranslateOptions opt;
  opt.beam = 3;
  opt.nbest = 3;
  opt.max_len_a = 1.0f;
  opt.max_len_b = 4;
  opt.batch_size = 3;
  Translator batched(dev, params, opt);
  uint64_t last_progress = 0;
  auto all = batched.translate(sources, [&](uint64_t done) { last_progress = done; });
  CHECK(last_progress == sources.size());
  opt.batch_size = 1;
  Translator single(dev, params, opt);
  REQUIRE(all.size() == sources.size());
  CHECK(all[1].empty());  // empty source, empty result
  for (size_t i = 0; i < sources.size(); ++i) {
    INFO("sentence " << i);
    auto one = single.translate({sources[i]});
    REQUIRE(one.size() == 1);
    REQUIRE(one[0].size() == all[i].size());
    for (size_t k = 0; k < all[i].size(); ++k) {
      CHECK(one[0][k].tokens == all[i][k].tokens);
      CHECK(one[0][k].score == Approx(all[i][k].score).epsilon(1e-4).margin(1e-5));
    }
    if (sources[i].empty()) continue;
    CHECK(all[i].size() == opt.nbest);
    for (size_t k = 0; k + 1 < all[i].size(); ++k) {
      CHECK(all[i][k].score >= all[i][k + 1].score);
      CHECK(all[i][k].tokens != all[i][k + 1].tokens);
    }
    for (const auto& h : all[i])
      CHECK(h.length() <= batched.max_output(uint32_t(sources[i].size()) + 1));
  }
  CHECK(batched.stats().sentences == sources.size() - 1);
}

VKF_TEST_CASE("translate text: tokenizer next to the checkpoint, invalid UTF-8 costs one line",
              "[decode]") {
  Device& dev = test::device();
  const Tokenizer& shared = test::small_tokenizer();
  test::TempDir dir;
  std::filesystem::copy_file(shared.path(), dir.file("spm.model"));
  ModelConfig c = tiny_config(shared.vocab_size());
  c.tokenizer = "spm.model";
  c.tokenizer_sha256 = shared.sha256();
  ParamLayout layout(c);
  save_checkpoint(dir.file(checkpoint_name(5)), c, layout, init_parameters(layout, c, 2), 5);

  LoadedModel m = load_model(dir.file(""));
  CHECK(m.path == dir.file(checkpoint_name(5)));
  DeviceParams params(dev, m.checkpoint.config);
  params.upload(m.checkpoint.params);
  TranslateOptions opt;
  opt.beam = 2;
  opt.max_len_b = 5;
  Translator tr(dev, params, opt);
  std::vector<uint64_t> bad;
  auto out = translate_lines(tr, m.tokenizer,
                             {"the house is small", "bad \xff\xfe line", "", "green tree"},
                             [&](uint64_t line) { bad.push_back(line); });
  REQUIRE(out.size() == 4);
  CHECK(bad == std::vector<uint64_t>{2});
  CHECK(out[1].invalid_utf8);
  CHECK(out[1].nbest.empty());
  CHECK(out[2].nbest.empty());
  CHECK(out[0].nbest.size() == 1);
  CHECK(out[3].nbest.size() == 1);
  CHECK_FALSE(out[0].truncated);

  // A line longer than the model's 40 positions is flagged, and still translated.
  std::string long_line;
  for (int i = 0; i < 60; ++i) long_line += "the house ";
  auto long_out = translate_lines(tr, m.tokenizer, {long_line});
  CHECK(long_out[0].truncated);
  CHECK(long_out[0].nbest.size() == 1);

  // Errors: a missing model, a tokenizer with another checksum.
  CHECK_THROWS_WITH(load_model(dir.file("nope")), Catch::Contains("does not exist"));
  c.tokenizer_sha256 = std::string(64, '0');
  save_checkpoint(dir.file(checkpoint_name(6)), c, layout, init_parameters(layout, c, 2), 6);
  CHECK_THROWS_WITH(load_model(dir.file("")), Catch::Contains("SHA-256"));
  std::filesystem::remove(dir.file("spm.model"));
  CHECK_THROWS_WITH(load_model(dir.file(checkpoint_name(5))), Catch::Contains("--vocab"));
  CHECK_NOTHROW(load_model(dir.file(checkpoint_name(5)), shared.path()));
}
