#include "tests/support/small_run.h"

#include <fstream>
#include <sstream>

#include "tests/support/small_corpus.h"

namespace vkf::test {

model::TrainerOptions small_run(const std::filesystem::path& out) {
  const SmallCorpus& corpus = small_corpus();
  model::TrainerOptions o;
  o.config = model::ModelConfig::preset("tiny");
  o.config.d_model = 32;
  o.config.d_ff = 64;
  o.config.heads = 2;
  o.config.encoder_layers = o.config.decoder_layers = 1;
  o.config.max_len = 64;
  o.config.dropout = 0.1f;
  o.train = model::CorpusFiles::two_files(corpus.src.string(), corpus.tgt.string());
  o.vocab = corpus.vocab.string();
  o.out_dir = out.string();
  o.max_sequence_len = 64;
  o.batching.max_tokens = 256;
  o.adam.warmup_steps = 10;
  o.log_every = 1000;
  o.progress = nullptr;
  return o;
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace vkf::test
