// Training throughput of the whole step (forward, loss, backward, Adam) per preset, with the
// activation and parameter memory it needs, side by side with PyTorch on the same config and
// batch when Debian's python3-torch is installed (bench/torch_train.py, run once per preset).
//
//   ./bench/bench_train --benchmark_format=json
//   VKF_BENCH_DEVICE=<selector>   the Vulkan device (default: best)
//   VKF_BENCH_TOKENS=N            tokens a side per batch (default 4096; 1024 for base/big on a
//                                 CPU device, whose steps take seconds)
//   VKF_BENCH_TORCH=0             skip PyTorch
//   VKF_BENCH_PROFILE=1           print the step's time per kernel (device timestamps)
//
// Counters: tokens_per_second (source + target tokens, no padding), torch_tokens_per_second and
// ratio_vs_torch (ours / PyTorch's), activation_MiB (the graph's buffers), state_MiB (parameters,
// gradients and Adam moments), device_bytes_per_token ((activations + state) / batch tokens a
// side). Each preset runs in fp32 and in mixed precision (the _fp16 runs: fp16 weight copies,
// activations and gradients, fp32 masters and Adam; issue 15), on devices with 16-bit storage.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "apps/vkf/bench/shapes.h"
#include "bench/bench_device.h"
#include "bench/torch_side.h"
#include "engine/engine.h"
#include "engine/step_scalars.h"
#include "model/device_params.h"
#include "model/optimizer.h"
#include "model/params.h"
#include "model/train_graph.h"

namespace {

using vkf::bench::device;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// PyTorch's tokens/s for the same preset and batch, or 0 when it is not available. On a GPU it
// runs on CUDA (the anchor a GPU user compares with), with autocast when `amp`; on a CPU device,
// on the same CPU cores.
double torch_tokens_per_second(const std::string& preset, int batch, int len, int vocab, bool gpu,
                               bool amp) {
  auto j = vkf::bench::run_torch(
      "torch_train.py --preset " + preset + " --batch " + std::to_string(batch) + " --len " +
      std::to_string(len) + " --vocab " + std::to_string(vocab) + " --steps " + (gpu ? "10" : "3") +
      (gpu ? " --device cuda" : "") + (amp ? " --amp" : ""));
  return j.contains("tokens_per_second") ? j["tokens_per_second"].get<double>() : 0.0;
}

void train_step(benchmark::State& state, const std::string& preset,
                vkf::model::Precision precision) {
  vkf::Device& dev = device();
  const bool half = precision == vkf::model::Precision::fp16;
  if (half && !dev.info().storage16) {
    state.SkipWithError("no 16-bit storage buffers on this device");
    return;
  }
  const bool cpu = dev.info().is_cpu();
  // The batch and vocabulary are apps/vkf/bench/shapes.h's, shared with `vkf bench`.
  const int tokens = env_int("VKF_BENCH_TOKENS", int(vkf::bench::train_tokens(preset, cpu)));
  const int len = int(vkf::bench::k_train_len), batch = std::max(1, tokens / len);
  const int vocab = int(vkf::bench::k_train_vocab);

  vkf::model::ModelConfig c = vkf::model::ModelConfig::preset(preset);
  c.vocab_size = vocab;
  std::unique_ptr<vkf::model::DeviceParams> owned;
  try {
    owned = std::make_unique<vkf::model::DeviceParams>(dev, c, 0, precision);
  } catch (const vkf::Error& e) {  // e.g. base's 46M parameters beyond lavapipe's 128 MiB buffers
    state.SkipWithError(e.what());
    return;
  }
  vkf::model::DeviceParams& params = *owned;
  params.upload(vkf::model::init_parameters(params.layout(), c, 1));
  vkf::Buffer scalars = dev.allocate(sizeof(vkf::StepScalars), "scalars", vkf::MemoryKind::host);
  auto* sc = reinterpret_cast<vkf::StepScalars*>(scalars.mapped());
  *sc = vkf::StepScalars{};
  const bool profile = env_int("VKF_BENCH_PROFILE", 0) != 0;
  auto pool = std::make_shared<vkf::model::ActivationPool>(dev);
  vkf::model::TrainGraph graph(
      dev, params, {uint32_t(batch), uint32_t(len), uint32_t(len)}, scalars.ref(),
      {.backward = true, .dropout = true, .profile = profile, .pool = pool});
  vkf::ops::AdamOptions adam;
  adam.d_model = float(c.d_model);
  vkf::model::Optimizer optimizer(dev, params, scalars.ref(), adam);

  std::mt19937 rng(1);
  std::uniform_int_distribution<int> tok(4, vocab - 1);
  vkf::model::BatchTokens b;
  for (auto* v : {&b.src, &b.tgt_in, &b.tgt_out}) {
    v->resize(size_t(batch) * len);
    for (auto& t : *v) t = tok(rng);
  }
  b.src_len.assign(size_t(batch), len);
  b.tgt_len.assign(size_t(batch), len);
  graph.set_batch(b);

  uint32_t step = 1;
  // Mixed precision scales the loss gradient as the trainer's initial loss scale does.
  const float loss_scale = half ? 128.0f : 1.0f;
  auto one_step = [&] {
    sc->step = step++;
    sc->grad_scale = loss_scale;
    auto r = graph.run();
    sc->grad_scale = 1.0f / (float(r.tokens) * loss_scale);
    optimizer.step();
  };
  one_step();  // warm-up: pipelines compiled, memory touched
  for (auto _ : state) one_step();

  if (profile)
    std::fprintf(stderr, "%s: %s\n", preset.c_str(), vkf::profile_table(graph.timings()).c_str());
  const double step_tokens = 2.0 * batch * len;
  state.counters["tokens_per_second"] =
      benchmark::Counter(step_tokens * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["batch_tokens"] = step_tokens / 2;
  state.counters["activation_MiB"] = double(pool->bytes()) / (1 << 20);
  state.counters["state_MiB"] = double(params.state_bytes()) / (1 << 20);
  state.counters["device_bytes_per_token"] =
      double(params.state_bytes() + pool->bytes()) / (step_tokens / 2);
  state.counters["parameters_M"] = double(params.layout().parameter_count()) / 1e6;
  if (half) return;  // PyTorch's side once per preset, beside the fp32 run
  if (double torch = torch_tokens_per_second(preset, batch, len, vocab, !cpu, false); torch > 0) {
    state.counters["torch_tokens_per_second"] = torch;
    // Our rate over the timed iterations, recomputed here: Counter rates are finalised later.
    state.counters["ratio_vs_torch"] = benchmark::Counter(
        step_tokens * double(state.iterations()) / torch, benchmark::Counter::kIsRate);
  }
  // On a GPU also PyTorch's mixed precision (autocast fp16), the rate GPU users train at.
  if (double amp = cpu ? 0.0 : torch_tokens_per_second(preset, batch, len, vocab, true, true);
      amp > 0) {
    state.counters["torch_amp_tokens_per_second"] = amp;
    state.counters["ratio_vs_torch_amp"] = benchmark::Counter(
        step_tokens * double(state.iterations()) / amp, benchmark::Counter::kIsRate);
  }
}

}  // namespace

using vkf::model::Precision;
BENCHMARK_CAPTURE(train_step, tiny, std::string("tiny"), Precision::fp32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(train_step, tiny_fp16, std::string("tiny"), Precision::fp16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(train_step, small, std::string("small"), Precision::fp32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(train_step, small_fp16, std::string("small"), Precision::fp16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(train_step, base, std::string("base"), Precision::fp32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);
BENCHMARK_CAPTURE(train_step, base_fp16, std::string("base"), Precision::fp16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

BENCHMARK_MAIN();
