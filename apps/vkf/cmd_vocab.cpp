// vkf vocab: trains the shared SentencePiece model (--train-sets SRC TGT --out FILE.model), or
// checks one by encoding or decoding stdin line by line (--model FILE.model --encode/--decode).
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "engine/error.h"
#include "engine/file_io.h"
#include "model/config.h"
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
  uint64_t max_line_bytes = model::k_default_max_line_bytes;
};

// Segmentation granularity on the first lines of a file: the number to look at when choosing a
// vocabulary size (around 1.2-1.5 pieces per word is typical for a good BPE size).
void print_granularity(const model::Tokenizer& tok, const std::string& path) {
  constexpr int64_t k_lines = 10000;
  model::LineReader reader(path);
  std::string_view line;
  int64_t lines = 0, words = 0, pieces = 0;
  while (lines < k_lines && reader.next(line)) {
    if (reader.too_long()) continue;
    ++lines;
    std::istringstream split{std::string(line)};
    for (std::string word; split >> word;) ++words;
    pieces += int64_t(tok.encode(line).size());
  }
  if (lines == 0 || words == 0) return;
  print("  %s: %.1f pieces per line, %.2f pieces per word (first %lld lines)\n", path.c_str(),
        double(pieces) / double(lines), double(pieces) / double(words),
        static_cast<long long>(lines));
}

int train(VocabArgs& args) {
  if (args.out.empty()) throw Error("vkf vocab: --train-sets needs --out FILE.model");
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& f : args.train_sets) inputs.push_back({"--train-sets", f});
  refuse_same_file("--out", args.out, inputs);
  args.train.inputs = args.train_sets;
  args.train.output_path = args.out;
  args.train.quiet = !args.verbose;
  args.train.max_line_bytes = args.max_line_bytes;
  auto start = std::chrono::steady_clock::now();
  model::Tokenizer::train(args.train);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto tok = model::Tokenizer::load(args.out);
  const auto& ids = tok.ids();
  print("trained %s in %.1f s: %d pieces (pad %d, unk %d, bos %d, eos %d), seed %u\n",
        args.out.c_str(), seconds, tok.vocab_size(), ids.pad, ids.unk, ids.bos, ids.eos,
        args.train.seed);
  print("  sha256 %s\n", tok.sha256().c_str());
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
  // A line over the cap is reported and gives an empty output line (the output stays
  // line-aligned with the input), as translate does.
  model::LineReaderOptions options{.max_line_bytes = args.max_line_bytes};
  options.on_too_long = [&](int64_t n) {
    std::fprintf(stderr,
                 "vkf vocab: line %lld is longer than %llu bytes (--max-line-bytes); writing an "
                 "empty line\n",
                 static_cast<long long>(n), static_cast<unsigned long long>(args.max_line_bytes));
  };
  model::LineReader reader(std::cin, "<stdin>", options);
  std::string_view line;
  while (reader.next(line)) {
    const int64_t n = reader.line_number();
    if (reader.too_long()) {
      std::cout << '\n';
    } else if (args.decode) {
      std::cout << tok.decode(parse_ids(std::string(line), n)) << '\n';
    } else if (args.pieces) {
      auto pieces = tok.encode_pieces(line);
      for (size_t i = 0; i < pieces.size(); ++i) std::cout << (i ? " " : "") << pieces[i];
      std::cout << '\n';
    } else {
      auto ids = tok.encode(line);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << '\n';
    }
    // A lost write (a full disk) stops the command instead of encoding the rest for nothing.
    if (!std::cout) throw Error("writing to standard output failed at line " + std::to_string(n));
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
          ->check(int_range(5, model::k_max_vocab))
          ->capture_default_str();
      sub.add_option("--out", args->out, "Where to write the .model file");
      sub.add_option("--max-sentences", args->train.max_sentences,
                     "Lines sampled for training when the input has more")
          ->check(int_range(1))
          ->capture_default_str();
      sub.add_option("--seed", args->train.seed, "Seed for that sampling")
          ->check(int_range(0, UINT32_MAX))
          ->capture_default_str();
      sub.add_option("--threads", args->train.threads, "Training threads")
          ->check(int_range(1, 1024))
          ->capture_default_str();
      add_max_line_bytes(sub, args->max_line_bytes);
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
