#include "fuzz/targets.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/error.h"
#include "engine/json_limits.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/data/line_reader.h"
#include "model/data/utf8.h"
#include "model/eval/bleu.h"
#include "model/eval/chrf.h"
#include "model/eval/text_lines.h"
#include "model/eval/utf8.h"
#include "model/params.h"
#include "model/safetensors.h"
#include "model/train/train_state.h"

namespace vkf::fuzz {

using namespace vkf::model;

namespace {

// UTF-8 bytes of code points, written independently of the decoder under test.
std::string encode_utf8(const std::u32string& code_points) {
  std::string out;
  for (const char32_t c : code_points) {
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xF0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3F));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

}  // namespace

void safetensors(std::string_view bytes) {
  try {
    const SafetensorsFile f = SafetensorsFile::from_bytes(std::string(bytes), "<fuzz>");
    uint64_t total = 0;
    for (const auto& name : f.names()) {
      // Accepted tensors lie within the file: a copy of each reads only its own bytes.
      std::vector<float> values(f.numel(name));
      f.copy(name, values.data());
      total += f.numel(name) * 4;
    }
    FUZZ_CHECK(total == f.data_bytes());  // every data byte belongs to exactly one tensor
    const Checkpoint ck = checkpoint_from(f);
    const ParamLayout layout(ck.config);
    FUZZ_CHECK(ck.params.size() == layout.total_floats());
    FUZZ_CHECK(layout.parameter_count() * 4 <= f.data_bytes());
  } catch (const Error&) {
  }
}

void optimizer_state(std::string_view bytes) {
  try {
    const SafetensorsFile f = SafetensorsFile::from_bytes(std::string(bytes), "<fuzz>");
    const uint64_t expected = f.contains("adam.m") ? f.numel("adam.m") : 0;
    const TrainState s = train_state_from(f, expected);
    FUZZ_CHECK(s.adam_m.size() == expected && s.adam_v.size() == expected);
    FUZZ_CHECK(s.train_pairs >= 0);
  } catch (const Error&) {
  }
}

void config(std::string_view bytes) {
  try {
    // The parse checkpoints use, with its depth limit (engine/json_limits.h).
    const ModelConfig c = ModelConfig::from_json(parse_json(bytes, "<fuzz>"));
    c.validate();
    // A valid config has a layout whose sizes fit int64, and survives a round trip.
    const ParamLayout layout(c);
    FUZZ_CHECK(layout.parameter_count() > 0);
    FUZZ_CHECK(ModelConfig::from_json(c.to_json()).to_json() == c.to_json());
  } catch (const Error&) {
  }
}

void lines(std::string_view bytes) {
  if (bytes.size() < 2) return;
  const uint64_t cap = 1 + uint8_t(bytes[0]);
  const bool keep_cr = bytes[1] & 1;
  const std::string text(bytes.substr(2));
  std::istringstream in(text);
  int64_t reported = 0;
  LineReaderOptions options{.max_line_bytes = cap, .keep_cr = keep_cr};
  options.on_too_long = [&](int64_t) { ++reported; };
  LineReader reader(in, "<fuzz>", options);
  std::string_view line;
  int64_t count = 0, too_long = 0;
  while (reader.next(line)) {
    ++count;
    FUZZ_CHECK(reader.line_number() == count);
    FUZZ_CHECK(line.size() <= cap);
    FUZZ_CHECK(line.find('\n') == std::string_view::npos);
    if (reader.too_long()) {
      ++too_long;
      FUZZ_CHECK(line.empty());
      continue;
    }
    // A valid line decodes to code points that encode back to the same bytes; an invalid one
    // is refused by the decoder too.
    if (is_valid_utf8(line)) {
      const std::u32string code_points = eval::decode_utf8(line, "<fuzz>");
      FUZZ_CHECK(code_points.size() <= line.size());
      FUZZ_CHECK(encode_utf8(code_points) == line);
    } else {
      bool refused = false;
      try {
        eval::decode_utf8(line, "<fuzz>");
      } catch (const Error&) {
        refused = true;
      }
      FUZZ_CHECK(refused);
    }
  }
  FUZZ_CHECK(reported == too_long);
  // One line per '\n', plus a last line without one.
  int64_t newlines = 0;
  for (char c : text) newlines += c == '\n';
  FUZZ_CHECK(count == newlines + (!text.empty() && text.back() != '\n' ? 1 : 0));
}

void metrics(std::string_view bytes) {
  const size_t split = bytes.find('\0');
  if (split == std::string_view::npos) return;
  try {
    std::istringstream hyp_in{std::string(bytes.substr(0, split))};
    std::istringstream ref_in{std::string(bytes.substr(split + 1))};
    std::vector<std::string> hyps = eval::read_text_lines(hyp_in, "hyp", 4096);
    std::vector<std::string> refs = eval::read_text_lines(ref_in, "ref", 4096);
    const size_t n = std::min(hyps.size(), refs.size());
    if (n == 0) return;
    hyps.resize(n);
    refs.resize(n);
    const eval::BleuScore bleu = eval::corpus_bleu(hyps, {refs});
    FUZZ_CHECK(std::isfinite(bleu.score) && bleu.score >= 0 && bleu.score <= 100 + 1e-9);
    const eval::ChrfScore chrf = eval::corpus_chrf(hyps, {refs});
    FUZZ_CHECK(std::isfinite(chrf.score) && chrf.score >= 0 && chrf.score <= 100 + 1e-9);
    // A corpus scored against itself is perfect wherever it has anything to score.
    const eval::BleuScore self = eval::corpus_bleu(refs, {refs});
    FUZZ_CHECK(self.stats.ref_len == self.stats.hyp_len);
    (void)eval::format_bleu(bleu);
    (void)eval::format_chrf(chrf);
  } catch (const Error&) {
  }
}

}  // namespace vkf::fuzz
