// vkf translate: translates stdin or --input line by line with a trained checkpoint (greedy or
// beam search on the device) and writes one detokenised line per input line, or with --nbest K
// a TSV of line number, rank, score and text. The work is in model/decode/.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "apps/tool_env/tool_env.h"
#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "apps/vkf/tuning_choice.h"
#include "engine/engine.h"
#include "engine/file_io.h"
#include "model/data/line_reader.h"
#include "model/decode/text.h"
#include "model/device_weights.h"
#include "model/loaded_model.h"

namespace vkf::app {
namespace {

struct TranslateArgs {
  std::string model, vocab, input, output, device;
  std::string tune;                // --tune auto|off|FILE (apps/vkf/tuning_choice.h)
  std::string precision = "auto";  // --precision fp32|fp16|auto (model/precision.h)
  model::decode::TranslateOptions options;
  uint32_t chunk = 2000;                  // lines read, sorted and translated together
  size_t chunk_bytes = size_t(64) << 20;  // and at most about this many bytes of them
  uint64_t max_line_bytes = model::k_default_max_line_bytes;
};

// Lines of a file or of stdin, `max` at a time. A line over --max-line-bytes is reported as
// soon as it passes the cap and comes back empty (so it gets an empty output line, as an
// invalid UTF-8 line does); its bytes are never held.
class LineSource {
 public:
  LineSource(const std::string& path, uint64_t max_line_bytes) {
    model::LineReaderOptions options{.max_line_bytes = max_line_bytes};
    options.on_too_long = [this, max_line_bytes](int64_t line) {
      ++too_long_;
      std::fprintf(stderr,
                   "vkf translate: line %lld is longer than %llu bytes (--max-line-bytes); "
                   "skipping to its end and writing an empty line\n",
                   static_cast<long long>(line), static_cast<unsigned long long>(max_line_bytes));
    };
    from_file_ = !path.empty() && path != "-";
    reader_ = from_file_ ? std::make_unique<model::LineReader>(path, options)
                         : std::make_unique<model::LineReader>(std::cin, "<stdin>", options);
  }
  // At most `max` lines and about `max_bytes` (2000 lines of up to 1 MiB each would be 2 GB).
  bool read(std::vector<std::string>& lines, size_t max, size_t max_bytes) {
    lines.clear();
    size_t bytes = 0;
    std::string_view line;
    while (lines.size() < max && bytes < max_bytes && reader_->next(line)) {
      lines.emplace_back(line);
      bytes += line.size();
    }
    return !lines.empty();
  }
  bool from_file() const { return from_file_; }
  uint64_t too_long() const { return too_long_; }

 private:
  std::unique_ptr<model::LineReader> reader_;
  bool from_file_ = false;
  uint64_t too_long_ = 0;
};

int run(const TranslateArgs& args) {
  args.options.validate();
  const model::PrecisionChoice precision_choice = model::parse_precision(args.precision);
  auto m = model::load_model(args.model, args.vocab);
  // Opening --output truncates it: it must not be a file this run reads.
  const bool to_file = !args.output.empty() && args.output != "-";
  if (to_file)
    refuse_same_file("--output", args.output,
                     {args.input.empty() || args.input == "-"
                          ? std::pair<std::string, std::string>{"standard input", "/dev/stdin"}
                          : std::pair<std::string, std::string>{"--input", args.input},
                      {"the checkpoint", m.path},
                      {"the vocabulary", m.tokenizer.path()},
                      {"--tune", args.tune}});
  auto instance = std::make_shared<Instance>(tool::instance_options());
  auto dev = Device::create(instance, tool::device_options({.selector = args.device}));
  const model::Precision precision = model::resolve_precision(precision_choice, dev->info());
  apply_tuning(*dev, args.tune,
               model::model_op_problems(m.checkpoint.config,
                                        model::decoding_work(uint32_t(args.options.beam),
                                                             uint32_t(args.options.batch_size),
                                                             model::activation_dtype(precision)),
                                        dev->info()),
               "vkf translate");
  // Weights only: no training state.
  model::DeviceWeights params(*dev, m.checkpoint.config, 0, precision);
  params.upload_checked(m.checkpoint.params, m.path);
  model::decode::Translator translator(*dev, params, args.options);

  std::ofstream file_out;
  if (to_file) {
    file_out.open(args.output, std::ios::binary | std::ios::trunc);
    if (!file_out) throw Error("cannot write " + args.output);
  }
  std::ostream& out = file_out.is_open() ? file_out : std::cout;
  const std::string out_name = file_out.is_open() ? args.output : "standard output";
  LineSource source(args.input, args.max_line_bytes);
  const bool report = source.from_file();
  // On a terminal the progress line rewrites itself; in a log it is a line every few seconds.
  const bool terminal = isatty(fileno(stderr)) != 0;
  auto last_progress = std::chrono::steady_clock::now();
  if (report)
    std::fprintf(stderr, "vkf translate: %s (step %llu) on %s, %s, beam %u, batch %u\n",
                 m.path.c_str(), static_cast<unsigned long long>(m.checkpoint.step),
                 dev->label().c_str(), model::precision_name(precision), args.options.beam,
                 args.options.batch_size);

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> lines;
  uint64_t first_line = 1, invalid = 0;
  while (source.read(lines, args.chunk, args.chunk_bytes)) {
    const uint64_t base = first_line;
    auto results = model::decode::translate_lines(
        translator, m.tokenizer, lines,
        [&](uint64_t n) {
          ++invalid;
          std::fprintf(stderr,
                       "vkf translate: line %llu is not valid UTF-8; writing an empty line\n",
                       static_cast<unsigned long long>(base + n - 1));
        },
        [&](uint64_t done) {
          if (!report) return;
          const auto now = std::chrono::steady_clock::now();
          if (!terminal && now - last_progress < std::chrono::seconds(10)) return;
          last_progress = now;
          const double s = std::chrono::duration<double>(now - start).count();
          std::fprintf(
              stderr,
              terminal ? "\r  %llu lines, %.1f sentences/s" : "  %llu lines, %.1f sentences/s\n",
              static_cast<unsigned long long>(base - 1 + done),
              double(translator.stats().sentences) / std::max(s, 1e-9));
        });
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      if (r.truncated)
        std::fprintf(stderr,
                     "vkf translate: line %llu is longer than the model's %u positions; only its "
                     "start was translated\n",
                     static_cast<unsigned long long>(base + i), translator.max_source_pieces() + 1);
      if (args.options.nbest <= 1) {
        out << (r.nbest.empty() ? std::string() : r.nbest[0].text) << '\n';
        continue;
      }
      const uint64_t line = base + i;
      if (r.nbest.empty()) {
        out << line << "\t1\t" << (r.invalid_utf8 ? "nan" : "0") << "\t\n";
        continue;
      }
      for (size_t k = 0; k < r.nbest.size(); ++k) {
        char score[32];
        std::snprintf(score, sizeof score, "%.6f", r.nbest[k].score);
        out << line << '\t' << k + 1 << '\t' << score << '\t' << r.nbest[k].text << '\n';
      }
    }
    out.flush();
    // Stop at the first lost write (a full disk), not after translating the rest for nothing.
    if (!out)
      throw Error("writing the translations to " + out_name + " failed" +
                  (errno ? std::string(": ") + std::strerror(errno) : std::string()));
    first_line += lines.size();
  }
  if (file_out.is_open()) {
    file_out.close();
    if (!file_out)
      throw Error("closing " + args.output + " failed: the translations are incomplete");
  }
  if (report) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& st = translator.stats();
    if (terminal) std::fprintf(stderr, "\r\033[K");  // clear the progress line
    std::fprintf(stderr,
                 "vkf translate: %llu lines (%llu translated, %llu invalid, %llu too long) in "
                 "%.2f s: %.2f sentences/s, %.1f source tokens/s, %.1f output tokens/s\n",
                 static_cast<unsigned long long>(first_line - 1),
                 static_cast<unsigned long long>(st.sentences),
                 static_cast<unsigned long long>(invalid),
                 static_cast<unsigned long long>(source.too_long()), s, double(st.sentences) / s,
                 double(st.source_tokens) / s, double(st.output_tokens) / s);
    std::fprintf(stderr, "vkf translate: device memory: %s peak (weights %s, decoder %s)\n",
                 format_bytes(dev->memory().stats(MemoryKind::device).peak_used_bytes).c_str(),
                 format_bytes(params.bytes()).c_str(),
                 format_bytes(translator.cache_bytes()).c_str());
  }
  return 0;
}

RegisterCommand reg(
    "translate", "Translate text with a trained checkpoint (greedy or beam search)",
    [](CLI::App& sub) {
      auto args = std::make_shared<TranslateArgs>();
      auto& o = args->options;
      sub.add_option("--model", args->model, "Checkpoint file, or a directory (its latest)")
          ->required();
      sub.add_option("--vocab", args->vocab,
                     "SentencePiece model (default: the one the checkpoint names, next to it)");
      sub.add_option("--input", args->input, "Input text, one sentence a line (default stdin)");
      sub.add_option("--output", args->output, "Where to write the translations (default stdout)");
      add_decoding_options(sub, o);
      sub.add_option("--nbest", o.nbest, "Write the K best as TSV: line number, rank, score, text")
          ->check(int_range(1, model::decode::k_max_beam))
          ->capture_default_str();
      add_max_line_bytes(sub, args->max_line_bytes);
      sub.add_option("--device", args->device, "Device: index, vendor or a part of its name");
      sub.add_option("--precision", args->precision,
                     "fp32, fp16 (fp16 weights and activations, fp32 arithmetic: half the "
                     "weights' memory), or auto (fp16 on a GPU with 16-bit storage, else fp32)")
          ->capture_default_str();
      add_tune_option(sub, args->tune);
      return [args]() { return run(*args); };
    });

}  // namespace
}  // namespace vkf::app
