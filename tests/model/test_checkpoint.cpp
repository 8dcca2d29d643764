#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/average.h"
#include "model/checkpoint.h"
#include "model/device_params.h"
#include "tests/support/vk_test.h"

using namespace vkf;
using namespace vkf::model;
namespace fs = std::filesystem;

namespace {
ModelConfig tiny_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.vocab_size = 50;
  c.tokenizer_sha256 = "abc123";
  return c;
}
fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("vkf-ckpt-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

TEST_CASE("parameter layout follows the design's names and shapes", "[model][params]") {
  ModelConfig c = tiny_config();
  ParamLayout layout(c);
  CHECK(layout.at("embed.weight").shape == std::vector<int64_t>{50, 64});
  CHECK(layout.at("encoder.layers.1.ffn.fc1.weight").shape == std::vector<int64_t>{256, 64});
  CHECK(layout.at("decoder.layers.0.cross_attn.o_proj.bias").shape == std::vector<int64_t>{64});
  CHECK(layout.at("decoder.layers.1.ffn_norm.weight").shape == std::vector<int64_t>{64});
  CHECK_FALSE(layout.contains("pos_embed.weight"));
  for (const auto& p : layout.params()) CHECK(p.offset % 64 == 0);
  // 2 encoder layers: 4 attention (4*64*64+4*64) + 2 norms + ffn; decoder adds cross attention.
  uint64_t attn = 4 * 64 * 64 + 4 * 64, norm = 128, ffn = 2 * 64 * 256 + 256 + 64;
  CHECK(layout.parameter_count() ==
        50 * 64 + 2 * (attn + 2 * norm + ffn) + 2 * (2 * attn + 3 * norm + ffn));
}

TEST_CASE("initialisation is deterministic and follows the reference scheme", "[model][params]") {
  ModelConfig c = tiny_config();
  ParamLayout layout(c);
  auto a = init_parameters(layout, c, 7), b = init_parameters(layout, c, 7),
       d = init_parameters(layout, c, 8);
  CHECK(a == b);
  CHECK(a != d);
  const auto& w = layout.at("encoder.layers.0.ffn.fc1.weight");
  float bound = std::sqrt(6.0f / (256 + 64));
  for (int64_t i = 0; i < w.numel(); ++i) CHECK(std::fabs(a[w.offset + i]) <= bound);
  CHECK(a[layout.at("encoder.layers.0.ffn_norm.weight").offset] == 1.0f);
  CHECK(a[layout.at("encoder.layers.0.ffn.fc1.bias").offset] == 0.0f);
}

TEST_CASE("checkpoints round-trip and are written atomically", "[model][checkpoint]") {
  ModelConfig c = tiny_config();
  ParamLayout layout(c);
  auto params = init_parameters(layout, c, 1);
  fs::path dir = temp_dir("roundtrip");
  save_checkpoint((dir / checkpoint_name(10)).string(), c, layout, params, 10);
  save_checkpoint((dir / checkpoint_name(200)).string(), c, layout, params, 200);
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().string().find(".tmp") == std::string::npos);
  CHECK(resolve_checkpoint(dir.string()) == (dir / checkpoint_name(200)).string());
  // Names that only look like a checkpoint's are not listed (the largest step would win).
  for (const char* name : {"checkpoint-.safetensors", "checkpoint-900x.safetensors",
                           "checkpoint-99999999999999999999999.safetensors",
                           "xcheckpoint-900.safetensors", "checkpoint-900.safetensors.bak"})
    std::ofstream(dir / name) << "x";
  CHECK(list_checkpoints(dir.string()).size() == 2);
  CHECK(resolve_checkpoint(dir.string()) == (dir / checkpoint_name(200)).string());
  Checkpoint ck = load_checkpoint(resolve_checkpoint(dir.string()));
  CHECK(ck.step == 200);
  CHECK(ck.params == params);
  CHECK(ck.config.to_json() == c.to_json());
  // Readable as plain safetensors with the design's names.
  SafetensorsFile f((dir / checkpoint_name(10)).string());
  CHECK(f.shape("embed.weight") == std::vector<int64_t>{50, 64});
  CHECK(f.metadata().at("step") == "10");
  fs::remove_all(dir);
}

TEST_CASE("bad checkpoints are refused with a clear error", "[model][checkpoint]") {
  ModelConfig c = tiny_config();
  ParamLayout layout(c);
  auto params = init_parameters(layout, c, 1);
  fs::path dir = temp_dir("bad");
  std::string good = (dir / "good.safetensors").string();
  save_checkpoint(good, c, layout, params, 1);

  std::string truncated = (dir / "truncated.safetensors").string();
  fs::copy_file(good, truncated);
  fs::resize_file(truncated, fs::file_size(good) - 100);
  REQUIRE_THROWS_WITH(load_checkpoint(truncated), Catch::Contains("truncated"));

  std::string text = (dir / "text.safetensors").string();
  std::ofstream(text) << "this is not a checkpoint, just some text that is long enough";
  REQUIRE_THROWS_WITH(load_checkpoint(text), Catch::Contains("not a valid safetensors"));
  REQUIRE_THROWS_WITH(load_checkpoint((dir / "missing").string()), Catch::Contains("cannot open"));

  ModelConfig other = c;
  other.d_ff = 128;
  REQUIRE_THROWS_WITH(require_compatible(other, c, "checkpoint"), Catch::Contains("d_ff"));
  ModelConfig other_vocab = c;
  other_vocab.tokenizer_sha256 = "def456";
  REQUIRE_THROWS_WITH(require_compatible(other_vocab, c, "checkpoint"),
                      Catch::Contains("another vocabulary"));
  REQUIRE_NOTHROW(require_compatible(c, c, "checkpoint"));
  REQUIRE_THROWS_WITH(resolve_checkpoint((dir / "nope").string()),
                      Catch::Contains("does not exist"));
  fs::remove_all(dir);
}

TEST_CASE("averaging checkpoints gives their element-wise mean and refuses mismatches",
          "[model][checkpoint][average]") {
  const fs::path dir = temp_dir("average");
  ModelConfig c = tiny_config();
  ParamLayout layout(c);
  const auto a = init_parameters(layout, c, 1), b = init_parameters(layout, c, 2);
  save_checkpoint((dir / checkpoint_name(10)).string(), c, layout, a, 10);
  save_checkpoint((dir / checkpoint_name(20)).string(), c, layout, b, 20);
  save_checkpoint((dir / checkpoint_name(30)).string(), c, layout, b, 30);

  const auto paths = last_checkpoints(dir.string(), 3);
  REQUIRE(paths.size() == 3);
  CHECK(paths.front() == (dir / checkpoint_name(10)).string());
  Checkpoint two = average_checkpoints({paths[0], paths[1]});
  CHECK(two.step == 20);
  REQUIRE(two.params.size() == a.size());
  size_t wrong = 0;
  for (size_t i = 0; i < a.size(); ++i)
    wrong += two.params[i] != float((double(a[i]) + double(b[i])) / 2.0);
  CHECK(wrong == 0);
  CHECK(two.params != a);
  // The same checkpoint twice is itself.
  CHECK(average_checkpoints({paths[1], paths[2]}).params == b);

  ModelConfig other = c;
  other.d_ff = 128;
  ParamLayout other_layout(other);
  save_checkpoint((dir / "other.safetensors").string(), other, other_layout,
                  init_parameters(other_layout, other, 3), 40);
  CHECK_THROWS_WITH(average_checkpoints({paths[0], (dir / "other.safetensors").string()}),
                    Catch::Contains("d_ff"));
  CHECK_THROWS_WITH(last_checkpoints(dir.string(), 4), Catch::Contains("fewer than"));
}

VKF_TEST_CASE("the device finite check flags NaN, Inf and overflowing weights and moments",
              "[model][checkpoint]") {
  Device& dev = test::device();
  ModelConfig c = tiny_config();
  ParamLayout layout(c);
  const auto params = init_parameters(layout, c, 1);
  // Small chunks: the check covers every chunk, not only the first.
  DeviceParams dp(dev, c, 128 * 1024);
  REQUIRE(dp.chunks().size() > 1);
  dp.upload(params);
  dp.zero_state();
  CHECK(dp.all_finite(true));
  const uint64_t last = layout.params().back().offset;  // in the last chunk
  for (float bad : {std::nanf(""), INFINITY, -INFINITY, 3e19f}) {
    INFO("value " << bad);
    auto p = params;
    p[last] = bad;
    dp.upload(p);
    CHECK_FALSE(dp.all_finite());
    dp.upload(params);
    auto m = std::vector<float>(params.size(), 0.0f);
    m[7] = bad;
    dp.upload_moments(std::vector<float>(params.size(), 0.0f), m);
    CHECK(dp.all_finite(false));  // moments not asked for
    CHECK_FALSE(dp.all_finite(true));
    dp.zero_state();
  }
  CHECK(first_nonfinite(layout, params) == std::nullopt);
  auto p = params;
  p[layout.at("decoder.layers.1.ffn.fc2.bias").offset + 3] = -INFINITY;
  CHECK(first_nonfinite(layout, p) == "tensor decoder.layers.1.ffn.fc2.bias, element 3 is -Inf");
}
