#include "tests/support/small_corpus.h"

#include <fstream>

#include "model/data/tokenizer.h"

namespace vkf::test {

const SmallCorpus& small_corpus() {
  static SmallCorpus c = [] {
    SmallCorpus k;
    k.dir = temp_dir("corpus");
    k.src = k.dir / "train.en";
    k.tgt = k.dir / "train.de";
    for (auto [from, to] : {std::pair{"train.en", k.src}, std::pair{"train.de", k.tgt}}) {
      std::ifstream in(std::filesystem::path(VKF_SOURCE_DIR) / "data/sample" / from);
      std::ofstream out(to);
      std::string line;
      for (int i = 0; i < 160 && std::getline(in, line); ++i) out << line << '\n';
    }
    k.vocab = k.dir / "vocab.model";
    model::TokenizerTrainOptions t;
    t.inputs = {k.src.string(), k.tgt.string()};
    t.output_path = k.vocab.string();
    t.vocab_size = 300;
    model::Tokenizer::train(t);
    return k;
  }();
  return c;
}

}  // namespace vkf::test
