// Tokenizer 13a. sacrebleu applies four Python regexes with re.sub (left-to-right,
// non-overlapping) and then ' '.join(line.split()); each regex is emulated by one scan below.
// Working on bytes instead of code points gives the same result: every class that must match
// a specific character is ASCII, and a UTF-8 lead or continuation byte is never ASCII, so a
// match can neither start nor end inside a multi-byte character differently than in Python.
#include "model/eval/tokenize_13a.h"

#include "model/eval/utf8.h"

namespace vkf::model::eval {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos);
  s = std::move(out);
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}  // [0-9]: ASCII only, as in the regexes
bool is_period_comma(char c) {
  return c == '.' || c == ',';
}

// r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' -> r' \1 ': the ASCII ranges {-~, [-`, space-&, (-+, :-@
// and '/', i.e. all ASCII punctuation except apostrophe, '-', '.' and ','.
bool is_split_punct(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

std::string split_punct(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s) {
    if (is_split_punct(c)) {
      out += ' ';
      out += c;
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

// One re.sub over a two-character pattern (first, second) -> `emit`: try at each position,
// and after a match continue behind both characters.
template <typename First, typename Second, typename Emit>
std::string sub_pairs(std::string_view s, First first, Second second, Emit emit) {
  std::string out;
  out.reserve(s.size() * 2);
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(out, s[i], s[i + 1]);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

}  // namespace

std::string tokenize_13a(std::string_view line) {
  // Language-independent part (tokenizer_13a.py), in sacrebleu's order.
  std::string s(line);
  replace_all(s, "<skipped>", "");
  replace_all(s, "-\n", "");
  replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    replace_all(s, "&quot;", "\"");
    replace_all(s, "&amp;", "&");
    replace_all(s, "&lt;", "<");
    replace_all(s, "&gt;", ">");
  }
  s = split_punct(" " + s + " ");
  auto not_digit = [](char c) { return !is_digit(c); };
  // r'([^0-9])([\.,])' -> r'\1 \2 ': period and comma unless preceded by a digit.
  s = sub_pairs(s, not_digit, is_period_comma, [](std::string& o, char a, char b) {
    o += a;
    o += ' ';
    o += b;
    o += ' ';
  });
  // r'([\.,])([^0-9])' -> r' \1 \2': period and comma unless followed by a digit.
  s = sub_pairs(s, is_period_comma, not_digit, [](std::string& o, char a, char b) {
    o += ' ';
    o += a;
    o += ' ';
    o += b;
  });
  // r'([0-9])(-)' -> r'\1 \2 ': dash after a digit.
  s = sub_pairs(
      s, is_digit, [](char c) { return c == '-'; },
      [](std::string& o, char a, char b) {
        o += a;
        o += ' ';
        o += b;
        o += ' ';
      });
  // ' '.join(line.split()): Python's split also breaks at non-ASCII whitespace (U+00A0, ...).
  std::string joined;
  joined.reserve(s.size());
  for (std::string_view token : split_python_whitespace(s)) {
    if (!joined.empty()) joined += ' ';
    joined.append(token);
  }
  return joined;
}

}  // namespace vkf::model::eval
