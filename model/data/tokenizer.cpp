#include "model/data/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <filesystem>
#include <unordered_map>

#include "engine/error.h"
#include "engine/file_io.h"
#include "model/data/line_reader.h"
#include "model/data/sha256.h"
#include "model/data/utf8.h"

namespace vkf::model {
namespace {

// Feeds SentencePiece the lines of several files in order, skipping empty and invalid UTF-8
// lines (the corpus reader skips them too, so the vocabulary is learned from what is trained on).
// Our own iterator rather than the trainer's `input=a,b` flag so paths may contain commas and
// CRLF files read the same as LF ones.
class FileLines : public sentencepiece::SentenceIterator {
 public:
  FileLines(const std::vector<std::string>& paths, uint64_t max_line_bytes)
      : paths_(paths), max_line_bytes_(max_line_bytes) {
    advance();
  }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void advance() {
    while (true) {
      if (!reader_) {
        if (next_path_ == paths_.size()) {
          done_ = true;
          return;
        }
        reader_ = std::make_unique<LineReader>(
            paths_[next_path_++], LineReaderOptions{.max_line_bytes = max_line_bytes_});
      }
      std::string_view line;
      if (!reader_->next(line)) {
        reader_.reset();
        continue;
      }
      if (reader_->too_long() || is_blank(line) || !is_valid_utf8(line)) continue;
      line_.assign(line);
      return;
    }
  }

  const std::vector<std::string>& paths_;
  uint64_t max_line_bytes_;
  size_t next_path_ = 0;
  std::unique_ptr<LineReader> reader_;
  std::string line_;
  bool done_ = false;
};

std::string sp_message(const sentencepiece::util::Status& status) {
  return std::string(status.message());
}

}  // namespace

void TokenizerTrainOptions::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("invalid tokenizer training options: " + what);
  };
  need(!inputs.empty(), "no input files");
  need(!output_path.empty(), "no output path");
  need(vocab_size > 4,
       "vocab_size must exceed the 4 special tokens, got " + std::to_string(vocab_size));
  need(max_sentences > 0, "max_sentences must be positive");
  need(character_coverage > 0.9 && character_coverage <= 1.0,
       "character_coverage must be in (0.9, 1]");
  need(threads >= 1, "threads must be >= 1");
  need(max_line_bytes >= 1, "max_line_bytes must be >= 1");
  for (const auto& path : inputs) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    need(std::filesystem::exists(status), "input " + path + " does not exist");
    need(!std::filesystem::is_directory(status), "input " + path + " is a directory");
    // SentencePiece would take an empty or special file (/dev/null) and fail later with a
    // message about sentences, not files.
    need(std::filesystem::is_regular_file(status),
         "input " + path + " is not a regular file (a device, pipe or socket)");
    need(std::filesystem::file_size(path, ec) > 0, "input " + path + " is empty");
  }
}

void Tokenizer::train(const TokenizerTrainOptions& options) {
  options.validate();
  // SentencePiece's sampler draws from a process-wide generator; seeding it is the only way to
  // make training reproducible.
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"pad_id", std::to_string(options.ids.pad)},
      {"unk_id", std::to_string(options.ids.unk)},
      {"bos_id", std::to_string(options.ids.bos)},
      {"eos_id", std::to_string(options.ids.eos)},
      {"input_sentence_size", std::to_string(options.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"character_coverage", std::to_string(options.character_coverage)},
      {"num_threads", std::to_string(options.threads)},
      {"minloglevel", options.quiet ? "2" : "0"},
  };
  FileLines lines(options.inputs, options.max_line_bytes);
  std::string model;
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  if (!status.ok())
    throw Error("training a " + std::to_string(options.vocab_size) +
                "-piece SentencePiece model failed: " + sp_message(status));

  // Written beside the target and renamed, so a crash never leaves a truncated model behind, and
  // a failed write (a full disk) removes its temporary file.
  AtomicFile out(options.output_path);
  out.write(model.data(), model.size());
  out.commit();
}

Tokenizer Tokenizer::load(const std::string& path) {
  std::error_code ec;
  const auto file = std::filesystem::status(path, ec);
  if (path.empty()) throw Error("no tokenizer model given (--vocab FILE.model)");
  if (!std::filesystem::exists(file))
    throw Error("tokenizer model " + path + " does not exist (train one with `vkf vocab`)");
  if (std::filesystem::is_directory(file))
    throw Error("tokenizer model " + path +
                " is a directory; give the SentencePiece .model file (e.g. " +
                (std::filesystem::path(path) / "vocab.model").string() + ")");
  if (!std::filesystem::is_regular_file(file))
    throw Error("tokenizer model " + path + " is not a regular file");
  Tokenizer tok;
  tok.sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto status = tok.sp_->Load(path);
  if (!status.ok())
    throw Error("cannot load tokenizer model " + path + ": not a SentencePiece model (" +
                sp_message(status) + ")");
  tok.ids_ = {.pad = tok.sp_->pad_id(),
              .unk = tok.sp_->unk_id(),
              .bos = tok.sp_->bos_id(),
              .eos = tok.sp_->eos_id()};
  if (tok.ids_.pad < 0 || tok.ids_.unk < 0 || tok.ids_.bos < 0 || tok.ids_.eos < 0)
    throw Error("tokenizer model " + path + " lacks a pad, unk, bos or eos piece (ids " +
                std::to_string(tok.ids_.pad) + ", " + std::to_string(tok.ids_.unk) + ", " +
                std::to_string(tok.ids_.bos) + ", " + std::to_string(tok.ids_.eos) +
                "); train it with `vkf vocab`");
  tok.path_ = path;
  tok.sha256_ = sha256_file_hex(path);
  return tok;
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  encode_append(text, ids);
  return ids;
}

void Tokenizer::encode_append(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<int> pieces;
  auto status = sp_->Encode(text, &pieces);
  if (!status.ok())
    throw Error("tokenizer " + path_ + " cannot encode a line: " + sp_message(status));
  ids.insert(ids.end(), pieces.begin(), pieces.end());
}

std::vector<std::string> Tokenizer::encode_pieces(std::string_view text) const {
  std::vector<std::string> pieces;
  auto status = sp_->Encode(text, &pieces);
  if (!status.ok())
    throw Error("tokenizer " + path_ + " cannot encode a line: " + sp_message(status));
  return pieces;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  // SentencePiece does not range-check ids (an out-of-range id aborts inside protobuf).
  const int size = vocab_size();
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= size)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " + path_ +
                  " (" + std::to_string(size) + " pieces)");
    if (id != ids_.pad && id != ids_.bos && id != ids_.eos) kept.push_back(id);
  }
  std::string text;
  auto status = sp_->Decode(kept, &text);
  if (!status.ok()) throw Error("tokenizer " + path_ + " cannot decode: " + sp_message(status));
  return text;
}

int Tokenizer::vocab_size() const {
  return sp_->GetPieceSize();
}

std::string Tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " + path_);
  return sp_->IdToPiece(id);
}

}  // namespace vkf::model
