// vkf vocab: trains the shared SentencePiece model (--train-sets SRC TGT --out FILE.model), or
// checks one by encoding or decoding stdin line by line (--model FILE.model --encode/--decode).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/vkf/command.h"
#include "engine/error.h"
#include "model/data/line_reader.h"
#include "model/data/tokenizer.h"

namespace vkf::app {
namespace {

struct VocabArgs {
  std::vector<std::string> train_sets;
  std::string out;
  model::TokenizerTrainOptions train;
  std::string model;
  bool encode = false;
  bool decode = false;
  bool pieces = false;
  bool verbose = false;
};

// Segmentation granularity on the first lines of a file: the number to look at when choosing a
// vocabulary size (around 1.2-1.5 pieces per word is typical for a good BPE size).
void print_granularity(const model::Tokenizer& tok, const std::string& path) {
  constexpr int64_t k_lines = 10000;
  model::LineReader reader(path);
  std::string_view line;
  int64_t lines = 0, words = 0, pieces = 0;
  while (lines < k_lines && reader.next(line)) {
    ++lines;
    std::istringstream split{std::string(line)};
    for (std::string word; split >> word;) ++words;
    pieces += int64_t(tok.encode(line).size());
  }
  if (lines == 0 || words == 0) return;
  std::printf("  %s: %.1f pieces per line, %.2f pieces per word (first %lld lines)\n", path.c_str(),
              double(pieces) / double(lines), double(pieces) / double(words),
              static_cast<long long>(lines));
}

int train(VocabArgs& args) {
  if (args.out.empty()) throw Error("vkf vocab: --train-sets needs --out FILE.model");
  args.train.inputs = args.train_sets;
  args.train.output_path = args.out;
  args.train.quiet = !args.verbose;
  auto start = std::chrono::steady_clock::now();
  model::Tokenizer::train(args.train);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto tok = model::Tokenizer::load(args.out);
  const auto& ids = tok.ids();
  std::printf("trained %s in %.1f s: %d pieces (pad %d, unk %d, bos %d, eos %d), seed %u\n",
              args.out.c_str(), seconds, tok.vocab_size(), ids.pad, ids.unk, ids.bos, ids.eos,
              args.train.seed);
  std::printf("  sha256 %s\n", tok.sha256().c_str());
  for (const auto& path : args.train_sets) print_granularity(tok, path);
  return 0;
}

std::vector<int32_t> parse_ids(const std::string& line, int64_t line_number) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long value = 0;
    try {
      value = std::stol(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || value < INT32_MIN || value > INT32_MAX)
      throw Error("vkf vocab --decode: line " + std::to_string(line_number) + ": '" + word +
                  "' is not a token id");
    ids.push_back(int32_t(value));
  }
  return ids;
}

int check(const VocabArgs& args) {
  if (args.encode == args.decode) throw Error("vkf vocab --model: give one of --encode, --decode");
  auto tok = model::Tokenizer::load(args.model);
  std::string line;
  for (int64_t n = 1; std::getline(std::cin, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (args.decode) {
      std::cout << tok.decode(parse_ids(line, n)) << '\n';
    } else if (args.pieces) {
      auto pieces = tok.encode_pieces(line);
      for (size_t i = 0; i < pieces.size(); ++i) std::cout << (i ? " " : "") << pieces[i];
      std::cout << '\n';
    } else {
      auto ids = tok.encode(line);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << '\n';
    }
  }
  return 0;
}

RegisterCommand reg(
    "vocab", "Train the shared SentencePiece vocabulary, or encode/decode with one",
    [](CLI::App& sub) {
      auto args = std::make_shared<VocabArgs>();
      auto* sets = sub.add_option("--train-sets", args->train_sets,
                                  "Text files to train on, one sentence a line (source and target)")
                       ->check(CLI::ExistingFile);
      sub.add_option("--vocab-size", args->train.vocab_size,
                     "Pieces in the vocabulary (8000 suits the ~150k-pair Debian corpus, 2000 the "
                     "bundled sample)")
          ->capture_default_str();
      sub.add_option("--out", args->out, "Where to write the .model file");
      sub.add_option("--max-sentences", args->train.max_sentences,
                     "Lines sampled for training when the input has more")
          ->capture_default_str();
      sub.add_option("--seed", args->train.seed, "Seed for that sampling")->capture_default_str();
      sub.add_option("--threads", args->train.threads, "Training threads")->capture_default_str();
      sub.add_flag("--verbose", args->verbose, "Show SentencePiece's training log");
      auto* model = sub.add_option("--model", args->model, "A trained .model file to check");
      sub.add_flag("--encode", args->encode, "Encode stdin lines to space-separated ids");
      sub.add_flag("--decode", args->decode, "Decode stdin lines of space-separated ids");
      sub.add_flag("--pieces", args->pieces, "With --encode: print pieces instead of ids");
      sets->excludes(model);
      return [args, sets, model]() {
        if (sets->count() > 0) return train(*args);
        if (model->count() > 0) return check(*args);
        throw Error("vkf vocab: give --train-sets SRC TGT --out FILE.model, or --model FILE.model");
      };
    });

}  // namespace
}  // namespace vkf::app
