#include "model/decode/text.h"

#include "model/data/utf8.h"

namespace vkf::model::decode {

std::vector<LineTranslation> translate_lines(Translator& translator, const Tokenizer& tokenizer,
                                             const std::vector<std::string>& lines,
                                             const std::function<void(uint64_t)>& invalid,
                                             const std::function<void(uint64_t)>& progress) {
  std::vector<LineTranslation> out(lines.size());
  std::vector<std::vector<int32_t>> sources(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!is_valid_utf8(lines[i])) {
      out[i].invalid_utf8 = true;
      if (invalid) invalid(i + 1);
      continue;
    }
    sources[i] = tokenizer.encode(lines[i]);
    out[i].truncated = sources[i].size() > translator.max_source_pieces();
  }
  auto found = translator.translate(sources, progress);
  for (size_t i = 0; i < lines.size(); ++i)
    for (const Hypothesis& h : found[i])
      out[i].nbest.push_back({tokenizer.decode(h.tokens), h.score});
  return out;
}

}  // namespace vkf::model::decode
