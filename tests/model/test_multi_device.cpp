// Data-parallel training over several logical devices on one physical device (how it is tested
// without GPUs): the same result as one device with the whole batch (dropout on: each replica
// draws the masks of its rows' place in the whole batch), replicas kept identical,
// a lost device stops cleanly, and a run resumes with another number of devices.
#include <cmath>
#include <filesystem>

#include "engine/error.h"
#include "model/checkpoint.h"
#include "model/params.h"
#include "model/train/trainer.h"
#include "tests/support/small_corpus.h"
#include "tests/support/vk_test.h"

using namespace vkf;
using namespace vkf::model;
namespace fs = std::filesystem;

namespace {

TrainerOptions run_options(const fs::path& out) {
  TrainerOptions o;
  o.config = ModelConfig::preset("tiny");
  o.config.d_model = 32;
  o.config.d_ff = 64;
  o.config.heads = 2;
  o.config.encoder_layers = o.config.decoder_layers = 1;
  o.config.max_len = 64;
  // Dropout on: each replica draws the masks of its rows' place in the whole batch.
  o.config.dropout = 0.1f;
  o.config.attention_dropout = 0.1f;
  o.train =
      CorpusFiles::two_files(test::small_corpus().src.string(), test::small_corpus().tgt.string());
  o.vocab = test::small_corpus().vocab.string();
  o.out_dir = out.string();
  o.max_sequence_len = 64;
  o.batching.max_tokens = 512;
  o.adam.schedule = ops::LrSchedule::constant;
  o.adam.lr = 1e-3f;
  o.adam.eps = 0.1f;  // see the first test
  o.balance = false;
  o.progress = nullptr;
  return o;
}

std::vector<Device*> logical_devices(size_t n, std::vector<std::unique_ptr<Device>>& owned) {
  std::vector<Device*> out;
  for (size_t i = 0; i < n; ++i) {
    owned.push_back(test::new_device());
    out.push_back(owned.back().get());
  }
  return out;
}

}  // namespace

VKF_TEST_CASE("2 and 3 logical devices train like one device with the whole batch",
              "[model][multidevice]") {
  const uint64_t steps = 3;
  TrainerOptions one = run_options(test::temp_dir("md-one"));
  one.max_steps = steps;
  train(test::device(), one);
  const Checkpoint want = load_checkpoint(resolve_checkpoint(one.out_dir));
  // The steps did move the weights (by far more than the tolerance below).
  const auto init = init_parameters(ParamLayout(want.config), want.config, one.seed);
  double moved = 0;
  for (size_t i = 0; i < init.size(); ++i)
    moved = std::max(moved, std::fabs(double(init[i]) - double(want.params[i])));
  CHECK(moved > 1e-4);

  // 2 and 3 devices, 2 devices with the parameters cut into chunks (one exchange each), and 2
  // devices of which the first takes three times the second's share (as a faster one would).
  struct Case {
    size_t n;
    uint64_t chunk;
    std::vector<double> shares;
  };
  for (const Case& k :
       {Case{2, 0, {}}, Case{3, 0, {}}, Case{2, 48 * 1024, {}}, Case{2, 0, {3.0, 1.0}}}) {
    INFO(k.n << " devices, chunk limit " << k.chunk << ", shares " << k.shares.size());
    std::vector<std::unique_ptr<Device>> owned;
    TrainerOptions o =
        run_options(test::temp_dir("md-" + std::to_string(k.n) + "-" + std::to_string(k.chunk) +
                                   "-" + std::to_string(k.shares.size())));
    o.max_steps = steps;
    TrainSummary s = train(logical_devices(k.n, owned), o,
                           {.initial_shares = k.shares, .max_param_chunk_bytes = k.chunk});
    CHECK(s.steps == steps);
    REQUIRE(s.replica_rows.size() == k.n);
    if (!k.shares.empty()) {
      // Batches of a few sentences round 3:1 coarsely, but far from equal shares.
      INFO("rows " << s.replica_rows[0] << " and " << s.replica_rows[1]);
      CHECK(s.replica_rows[1] > 0);
      CHECK(s.replica_rows[0] >= 2 * s.replica_rows[1]);
    }
    const Checkpoint got = load_checkpoint(resolve_checkpoint(o.out_dir));
    REQUIRE(got.params.size() == want.params.size());
    // The gradient sums differ from one device's only in fp32 rounding. With the paper's
    // eps = 1e-9, Adam's first steps move a weight by about lr * sign(gradient), so a gradient
    // within rounding of zero could flip a whole step; eps = 0.1 (set below) makes the update
    // smooth in the gradient, so rounding stays rounding.
    double worst = 0;
    for (size_t i = 0; i < want.params.size(); ++i)
      worst = std::max(worst, std::fabs(double(got.params[i]) - double(want.params[i])));
    INFO("worst parameter difference " << worst);
    CHECK(worst <= 1e-6);
  }
}

VKF_TEST_CASE("the exchange overlapped with the backward gives the bits of the one after it",
              "[model][multidevice]") {
  // Two layers a stack (several backward segments and buckets), parameters in chunks (several
  // exchanges), two micro-batches a step (only the last one overlaps), 3 devices.
  auto options = [](const std::string& name, TrainerOptions::Exchange exchange) {
    TrainerOptions o = run_options(test::temp_dir(name));
    o.config.encoder_layers = o.config.decoder_layers = 2;
    o.accumulate = 2;
    o.max_steps = 2;
    o.exchange = exchange;
    return o;
  };
  std::vector<std::vector<float>> params;
  for (auto mode :
       {TrainerOptions::Exchange::after_backward, TrainerOptions::Exchange::overlapped}) {
    std::vector<std::unique_ptr<Device>> owned;
    const bool overlapped = mode == TrainerOptions::Exchange::overlapped;
    TrainerOptions o = options(overlapped ? "md-overlap" : "md-after", mode);
    TrainSummary s = train(logical_devices(3, owned), o, {.max_param_chunk_bytes = 48 * 1024});
    CHECK(s.steps == 2);
    params.push_back(load_checkpoint(resolve_checkpoint(o.out_dir)).params);
  }
  REQUIRE(params[0].size() == params[1].size());
  uint64_t differ = 0;
  for (size_t i = 0; i < params[0].size(); ++i) differ += params[0][i] != params[1][i];
  CHECK(differ == 0);
}

VKF_TEST_CASE("balanced shares keep the replicas identical", "[model][multidevice]") {
  std::vector<std::unique_ptr<Device>> owned;
  TrainerOptions o = run_options(test::temp_dir("md-balance"));
  o.balance = true;
  o.balance_after = 2;
  o.max_steps = 5;
  o.save_every = 2;  // each checkpoint compares the replicas' parameters
  CHECK(train(logical_devices(2, owned), o).steps == 5);
}

VKF_TEST_CASE("a lost device stops the run cleanly and it resumes on fewer devices",
              "[model][multidevice]") {
  std::vector<std::unique_ptr<Device>> owned;
  const fs::path dir = test::temp_dir("md-lost");
  TrainerOptions o = run_options(dir);
  o.max_steps = 10;
  o.save_every = 2;
  TrainTestHooks hooks;
  hooks.before_submit = [](uint64_t step, int replica) {
    if (step == 4 && replica == 1) throw DeviceLostError("VK_ERROR_DEVICE_LOST (injected)");
  };
  REQUIRE_THROWS_WITH(
      train(logical_devices(2, owned), o, hooks),
      Catch::Contains("device was lost at step 4") && Catch::Contains("checkpoint-2.safetensors"));
  CHECK(load_checkpoint(resolve_checkpoint(dir.string())).step == 2);

  TrainerOptions again = run_options(dir);
  again.resume = true;
  again.max_steps = 4;
  CHECK(train(test::device(), again).steps == 4);
  // ... and on three.
  again.max_steps = 6;
  std::vector<std::unique_ptr<Device>> more;
  CHECK(train(logical_devices(3, more), again).steps == 6);
}
