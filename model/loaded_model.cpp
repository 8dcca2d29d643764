#include "model/loaded_model.h"

#include <filesystem>

#include "engine/error.h"

namespace vkf::model {

LoadedModel load_model(const std::string& file_or_dir, const std::string& vocab) {
  const std::string path = resolve_checkpoint(file_or_dir);
  Checkpoint ck = load_checkpoint(path);
  std::string vocab_path = vocab;
  if (vocab_path.empty()) {
    if (ck.config.tokenizer.empty())
      throw Error(path + " does not name its tokenizer; pass --vocab FILE.model");
    vocab_path = (std::filesystem::path(path).parent_path() /
                  std::filesystem::path(ck.config.tokenizer).filename())
                     .string();
    if (!std::filesystem::exists(vocab_path))
      throw Error("the tokenizer " + ck.config.tokenizer + " that " + path +
                  " was trained with is not beside it (" + vocab_path + "); pass --vocab");
  }
  Tokenizer tok = Tokenizer::load(vocab_path);
  if (!ck.config.tokenizer_sha256.empty() && tok.sha256() != ck.config.tokenizer_sha256)
    throw Error(vocab_path + " is not the vocabulary " + path + " was trained with (SHA-256 " +
                tok.sha256().substr(0, 12) + ", expected " +
                ck.config.tokenizer_sha256.substr(0, 12) + ")");
  if (tok.vocab_size() != ck.config.vocab_size)
    throw Error(vocab_path + " has " + std::to_string(tok.vocab_size()) + " pieces but " + path +
                " a vocabulary of " + std::to_string(ck.config.vocab_size));
  const SpecialIds& ids = tok.ids();
  const ModelConfig& c = ck.config;
  if (ids.pad != c.pad_id || ids.unk != c.unk_id || ids.bos != c.bos_id || ids.eos != c.eos_id)
    throw Error(vocab_path + " and " + path + " disagree on the pad/unk/bos/eos ids");
  return {path, std::move(ck), std::move(tok)};
}

}  // namespace vkf::model
