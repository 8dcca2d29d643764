// A tuned run (Device::set_tuning, what `vkf train --tune` applies) trains bit-identically to an
// untuned run that makes the same kernel choices: the tuning changes which kernels run, never
// what the model computes with them. Every family is tuned: matmul and (on CPU devices) the
// attention path to kernels the untuned run takes only when told to, device-wide; LayerNorm and
// cross-entropy and Adam to their defaults, written out (there is no device-wide switch for them).
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/ops/adam.h"
#include "engine/ops/attention_choice.h"
#include "engine/ops/layer_norm_choice.h"
#include "engine/ops/loss_choice.h"
#include "engine/ops/matmul_choice.h"
#include "engine/tuning.h"
#include "model/checkpoint.h"
#include "model/train/trainer.h"
#include "tests/support/small_run.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vk_test.h"

using namespace vkf;
using namespace vkf::model;
namespace fs = std::filesystem;

namespace {

using test::read_bytes;

TrainerOptions small_run(const fs::path& out) {
  TrainerOptions o = test::small_run(out);
  o.max_steps = 3;
  return o;
}

}  // namespace

VKF_TEST_CASE("a tuned run trains bit-identically to an untuned one with the same kernels",
              "[model][trainer][tune]") {
  // Every f32 shape class tuned to the table's row with the other read mode (texel views where
  // the device reads storage buffers, and back): a kernel the untuned run does not choose
  // unless told to, which the untuned run is, device-wide (OpOverrides::matmul_texel_views).
  if (test::device().options().ops.matmul_texel_views)
    VKF_SKIP("VKF_MATMUL_TEXEL forces the read mode this test varies");
  const DeviceInfo& info = test::device().info();
  const bool flipped = !info.is_cpu();
  auto tuning = std::make_shared<Tuning>();
  tuning->origin = "test";
  const uint32_t sizes[] = {16, 128, 1024, 4096};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (uint32_t m : sizes)
        for (uint32_t n : sizes)
          for (uint32_t k : sizes) {
            const ops::MatmulProblem p{DType::f32, ta, tb, m, n, k};
            ops::MatmulConfig c = ops::choose_matmul(info, nullptr, p).config;
            c.name = "tuned " + c.name;
            c.texel = flipped;
            tuning->of<ops::MatmulFamily>()[ops::matmul_shape_class(p)] = c;
          }
  REQUIRE(tuning->of<ops::MatmulFamily>().size() == 4 * 64);

  // Attention: on a CPU device the tiled path (with its default tiles) where the untuned run
  // takes the rows path; on a GPU the tiled path is the default already. Every class the model
  // can meet: head dim 16, lengths up to 64, masked or not, each kernel.
  const bool flip_attention = info.is_cpu();
  const uint32_t lens[] = {16, 64, 256, 1024, 4096};  // one in each length bucket
  for (auto kernel : {ops::AttentionKernel::forward, ops::AttentionKernel::backward_kv,
                      ops::AttentionKernel::backward_q})
    for (bool causal : {false, true})
      for (uint32_t lq : lens)
        for (uint32_t lk : lens) {
          ops::AttentionTiles t = ops::attention_default_tiles(info, kernel, 16, 16);
          t.path = ops::AttentionPath::tiled;
          tuning->of<ops::AttentionFamily>()[ops::attention_shape_class(
              {DType::f32, kernel, 16, 16, lq, lk, causal})] = t;
        }
  // LayerNorm (d_model 32) and the loss: their defaults, as tuned entries.
  for (bool backward : {false, true})
    tuning->of<ops::LayerNormFamily>()[ops::layer_norm_shape_class({DType::f32, backward, 1, 32})] =
        ops::layer_norm_default_config(info, 32);
  const uint32_t vocab = 300;  // the small corpus's vocabulary (tests/support/small_corpus.h)
  tuning->of<ops::CrossEntropyFamily>()[ops::cross_entropy_shape_class({DType::f32, 1, vocab})] =
      ops::row_kernel_default_config(info);

  // Adam: its default, as tuned entries for every parameter-count class.
  for (uint32_t n : {1u, 1u << 17, 1u << 21, 1u << 25})
    tuning->of<ops::AdamFamily>()[ops::adam_shape_class({n})] = ops::adam_default_config(info);

  auto tuned = test::new_device();
  tuned->set_tuning(tuning);
  std::string adam_why;
  CHECK(ops::choose_adam_config(*tuned, {5000}, &adam_why) == ops::adam_default_config(info));
  CHECK_THAT(adam_why, Catch::StartsWith("tuned for"));
  CHECK(ops::choose_attention(info, tuned->tuning(),
                              {DType::f32, ops::AttentionKernel::forward, 16, 16, 30, 30, true})
            .source == ops::ConfigSource::tuned);
  CHECK(ops::choose_layer_norm(info, tuned->tuning(), {DType::f32, true, 100, 32}).source ==
        ops::ConfigSource::tuned);
  CHECK(ops::choose_cross_entropy(info, tuned->tuning(), {DType::f32, 100, vocab}).source ==
        ops::ConfigSource::tuned);
  const ops::MatmulChoice asked =
      ops::choose_matmul(*tuned, ops::MatmulProblem{DType::f32, false, true, 200, 64, 32});
  CHECK(asked.source == ops::MatmulSource::tuned);
  DeviceOptions forced;
  forced.ops.matmul_texel_views = flipped;
  if (flip_attention) forced.ops.attention_rows = false;
  auto untuned = test::new_device(forced);
  REQUIRE(untuned->tuning() == nullptr);

  const fs::path a = test::temp_dir("tuned-run"), b = test::temp_dir("untuned-run");
  train(*tuned, small_run(a));
  train(*untuned, small_run(b));
  REQUIRE(fs::exists(a / checkpoint_name(3)));
  REQUIRE(fs::exists(b / checkpoint_name(3)));
  CHECK(read_bytes(a / checkpoint_name(3)) == read_bytes(b / checkpoint_name(3)));
}
