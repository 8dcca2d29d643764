// Writes the binary seeds of fuzz/corpus: a valid checkpoint of a tiny model and its optimizer
// state, so the fuzzer starts from files that pass every check and mutates them from there.
// Run from the repository root: build-fuzz/make_seeds fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <string>

#include "model/checkpoint.h"
#include "model/train/train_state.h"

int main(int argc, char** argv) {
  using namespace vkf::model;
  const std::filesystem::path out = argc > 1 ? argv[1] : "fuzz/corpus";
  ModelConfig c;
  c.d_model = 4;
  c.d_ff = 4;
  c.heads = 1;
  c.encoder_layers = c.decoder_layers = 1;
  c.vocab_size = 5;
  c.max_len = 4;
  c.tokenizer = "vocab.model";
  c.tokenizer_sha256 = std::string(64, '0');
  const ParamLayout layout(c);
  const std::vector<float> params = init_parameters(layout, c, 1);
  std::filesystem::create_directories(out / "safetensors");
  std::filesystem::create_directories(out / "optimizer_state");
  save_checkpoint((out / "safetensors" / "tiny.safetensors").string(), c, layout, params, 3);
  TrainState s;
  s.step = 3;
  s.seed = 1;
  s.train_pairs = 10;
  s.adam_m.assign(layout.total_floats(), 0.5f);
  s.adam_v.assign(layout.total_floats(), 0.25f);
  s.params_checksum = params_checksum(layout, params);
  save_train_state((out / "optimizer_state" / "tiny.optimizer.safetensors").string(), s);
  std::printf("wrote seeds into %s\n", out.c_str());
  return 0;
}
