#include "tests/support/tiny_model.h"

#include "model/checkpoint.h"
#include "model/params.h"
#include "tests/model/fixtures/data_fixture.h"
#include "tests/support/small_corpus.h"

namespace vkf::test {

const TinyModel& tiny_model() {
  static const TinyModel m = [] {
    const model::Tokenizer& tok = small_tokenizer();
    TinyModel t;
    t.dir = temp_dir("tiny-model");
    std::filesystem::copy_file(tok.path(), t.dir / "spm.model",
                               std::filesystem::copy_options::overwrite_existing);
    model::ModelConfig& c = t.config;
    c.d_model = 32;
    c.d_ff = 64;
    c.heads = 4;
    c.encoder_layers = 2;
    c.decoder_layers = 2;
    c.vocab_size = tok.vocab_size();
    c.max_len = 40;
    c.tokenizer = "spm.model";
    c.tokenizer_sha256 = tok.sha256();
    model::ParamLayout layout(c);
    // Embeddings scaled up, so next-token distributions are peaked and searches have clear
    // winners (ties would make the comparisons depend on rounding).
    auto flat = model::init_parameters(layout, c, 11);
    const auto& e = layout.at("embed.weight");
    for (int64_t i = 0; i < e.numel(); ++i) flat[e.offset + uint64_t(i)] *= 3.0f;
    t.checkpoint = t.dir / model::checkpoint_name(7);
    model::save_checkpoint(t.checkpoint.string(), c, layout, flat, 7);
    t.sentences = {"the house is small.", "we see a river and a mountain.", "",
                   "open the file and print the page.", "the friend greets the city at night."};
    return t;
  }();
  return m;
}

}  // namespace vkf::test
