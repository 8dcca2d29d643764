// Whole-sentence translation on a small random model ("tiny" preset, vocabulary 1000): beam 4
// with batches of 32 and of 1 sentence, and greedy with batch 32. Sources of 20 tokens; the
// random model rarely emits EOS, so every sentence runs to its maximum of 20 output tokens
// (--max-len-a 0 --max-len-b 20). Counters: sentences/s and output tokens/s (EOS included).
// The same checkpoint is decoded by PyTorch when python3-torch is installed
// (bench/torch_translate.py: nn.Transformer's layers run incrementally over a key/value cache, as
// fairseq and CTranslate2 decode; on CUDA when the Vulkan device is a GPU, else on the same CPU
// cores): counters torch_sentences/s and ratio_vs_torch.
//   bench_translate --benchmark_min_time=1 --benchmark_format=json
//   VKF_BENCH_PROFILE=1   also print one decoder step's time per kernel (device timestamps)
//   VKF_BENCH_PRESET=base the model's preset instead of tiny (a GPU: the paper's sizes, whose
//                         k of 512 and 2048 decoding splits where C has few tiles; compare
//                         with VKF_MATMUL_SPLIT_K=0)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <set>

#include "bench/bench_device.h"
#include "bench/torch_side.h"
#include "engine/engine.h"
#include "engine/error.h"
#include "model/checkpoint.h"
#include "model/decode/graph.h"
#include "model/decode/translator.h"
#include "model/params.h"

using namespace vkf;
using namespace vkf::model;

namespace {

using vkf::bench::device;

DeviceWeights& params() {
  static std::unique_ptr<DeviceWeights> p = [] {
    const char* preset = std::getenv("VKF_BENCH_PRESET");
    ModelConfig c;
    try {
      c = ModelConfig::preset(preset && *preset ? preset : "tiny");
    } catch (const Error& e) {  // a misspelled preset: say so, not a terminate()
      std::fprintf(stderr, "bench_translate: VKF_BENCH_PRESET: %s\n", e.what());
      std::exit(1);
    }
    c.vocab_size = 1000;
    c.max_len = 128;
    auto dp = std::make_unique<DeviceWeights>(device(), c);
    dp->upload(init_parameters(dp->layout(), c, 1));
    return dp;
  }();
  return *p;
}

void translate(benchmark::State& state) {
  const uint32_t beam = uint32_t(state.range(0)), batch = uint32_t(state.range(1));
  decode::TranslateOptions opt;
  opt.beam = beam;
  opt.batch_size = batch;
  opt.max_len_a = 0.0f;
  opt.max_len_b = 20;
  decode::Translator tr(device(), params(), opt);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> tok(4, params().config().vocab_size - 1);
  std::vector<std::vector<int32_t>> sources(batch, std::vector<int32_t>(20));
  for (auto& s : sources)
    for (auto& t : s) t = tok(rng);
  tr.translate(sources);  // records the shape and compiles the kernels
  const auto before = tr.stats();
  for (auto _ : state) benchmark::DoNotOptimize(tr.translate(sources));
  const auto& after = tr.stats();
  state.counters["sentences/s"] =
      benchmark::Counter(double(after.sentences - before.sentences), benchmark::Counter::kIsRate);
  state.counters["tokens/s"] = benchmark::Counter(
      double(after.output_tokens - before.output_tokens), benchmark::Counter::kIsRate);

  static std::set<std::pair<uint32_t, uint32_t>> profiled;  // once per shape, not per repetition
  if (const char* p = std::getenv("VKF_BENCH_PROFILE");
      p && std::string(p) == "1" && profiled.insert({beam, batch}).second) {
    // One step at position 10, as the search runs it (its top-k included), with device
    // timestamps.
    decode::DecodeShape shape{
        batch, beam, 21, 20,
        decode::DecodeShape::candidates_for(beam, uint32_t(params().config().vocab_size))};
    decode::DecodeGraph graph(device(), params(), shape, true);
    std::vector<int32_t> src(size_t{batch} * 21, 5), len(batch, 21), toks(shape.rows(), 7);
    graph.encode(src, len);
    for (uint32_t t = 0; t <= 10; ++t) graph.step(t, toks);
    std::fprintf(stderr, "beam %u x batch %u, one decoder step:\n%s\n", beam, batch,
                 profile_table(graph.last_step_timings()).c_str());
  }

  // PyTorch on the same parameters, same sources' shape and lengths.
  const std::string ckpt =
      (std::filesystem::temp_directory_path() / "vkf-bench-translate.safetensors").string();
  save_checkpoint(ckpt, params().config(), params().layout(), params().download(), 0);
  auto torch = bench::run_torch("torch_translate.py speed --model " + ckpt + " --beam " +
                                std::to_string(beam) + " --batch " + std::to_string(batch) +
                                " --src-len 21 --max-len 20" +
                                (device().info().is_cpu() ? "" : " --device cuda"));
  if (torch.contains("sentences_per_second")) {
    const double t = torch["sentences_per_second"].get<double>();
    state.counters["torch_sentences/s"] = t;
    state.counters["ratio_vs_torch"] = benchmark::Counter(
        double(after.sentences - before.sentences) / t, benchmark::Counter::kIsRate);
  }
}

}  // namespace

BENCHMARK(translate)
    ->ArgNames({"beam", "batch"})
    ->Args({4, 32})
    ->Args({4, 1})
    ->Args({1, 32})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
