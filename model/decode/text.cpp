#include "model/decode/text.h"

#include "model/data/utf8.h"

namespace vkf::model::decode {

PreparedLines prepare_lines(const Translator& translator, const Tokenizer& tokenizer,
                            const std::vector<std::string>& lines,
                            const std::function<void(uint64_t)>& invalid) {
  PreparedLines p;
  p.out.resize(lines.size());
  p.sources.resize(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!is_valid_utf8(lines[i])) {
      p.out[i].invalid_utf8 = true;
      if (invalid) invalid(i + 1);
      continue;
    }
    p.sources[i] = tokenizer.encode(lines[i]);
    p.out[i].truncated = p.sources[i].size() > translator.max_source_pieces();
  }
  return p;
}

std::vector<LineTranslation> finish_lines(PreparedLines&& prepared, const Tokenizer& tokenizer,
                                          const std::vector<std::vector<Hypothesis>>& found) {
  std::vector<LineTranslation> out = std::move(prepared.out);
  for (size_t i = 0; i < out.size() && i < found.size(); ++i)
    for (const Hypothesis& h : found[i])
      out[i].nbest.push_back({tokenizer.decode(h.tokens), h.score});
  return out;
}

std::vector<LineTranslation> translate_lines(Translator& translator, const Tokenizer& tokenizer,
                                             const std::vector<std::string>& lines,
                                             const std::function<void(uint64_t)>& invalid,
                                             const std::function<void(uint64_t)>& progress) {
  PreparedLines p = prepare_lines(translator, tokenizer, lines, invalid);
  auto found = translator.translate(p.sources, progress);
  return finish_lines(std::move(p), tokenizer, found);
}

}  // namespace vkf::model::decode
