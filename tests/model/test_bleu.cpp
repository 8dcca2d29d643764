// BLEU, chrF and tokenizer 13a against cases worked by hand and sacreBLEU's README example.
// Every expected tokenization and score below was also checked with an independent Python
// rewrite of sacrebleu 2.x's algorithm (Python's own re and str.split for the tokenizer).
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "engine/error.h"
#include "model/eval/bleu.h"
#include "model/eval/chrf.h"
#include "model/eval/text_lines.h"
#include "model/eval/tokenize_13a.h"
#include "model/eval/utf8.h"

namespace eval = vkf::model::eval;
using Catch::Matchers::Contains;

namespace {

eval::BleuScore bleu1(const std::string& hyp, const std::string& ref) {
  return eval::corpus_bleu({hyp}, {{ref}});
}

double chrf1(const std::string& hyp, const std::string& ref) {
  return eval::corpus_chrf({hyp}, {{ref}}).score;
}

}  // namespace

TEST_CASE("tokenizer 13a splits like sacrebleu", "[eval][bleu]") {
  auto [in, out] = GENERATE(table<std::string, std::string>({
      {"Hello, world!", "Hello , world !"},
      // period and comma stay inside numbers; '$' is split off
      {"It costs $1,000.50.", "It costs $ 1,000.50 ."},
      {".5 and 5. and 5.5 and a.b and 1,5 and ,5", ". 5 and 5 . and 5.5 and a . b and 1,5 and , 5"},
      {"A,B,C", "A , B , C"},
      {"a.,b", "a . , b"},
      {"e.g. U.S.A. end...", "e . g . U . S . A . end . . ."},
      // a dash splits only after a digit; apostrophes never split
      {"3-4 times, 1990-1995", "3 - 4 times , 1990 - 1995"},
      {"well-known a -- b", "well-known a -- b"},
      {"-5 and 5- and x-5", "-5 and 5 - and x-5"},
      {"price: 2.5-3.0", "price : 2.5 - 3.0"},
      {"don't stop", "don't stop"},
      // entities are unescaped once, in the order &quot; &amp; &lt; &gt;
      {"&quot;Hi&quot; &amp; &lt;b&gt;", "\" Hi \" & < b >"},
      {"&amp;quot; &amp;lt;", "& quot ; <"},
      {"<skipped> text", "text"},
      {"a<skipped>b", "ab"},
      {"(a) [b] {c} a/b", "( a ) [ b ] { c } a / b"},
      {"50% off @home #1 ~x ^y _z `q` |p| \\s", "50 % off @ home # 1 ~ x ^ y _ z ` q ` | p | \\ s"},
      {"  spaced   out  ", "spaced out"},
      // Python's str.split() also breaks at U+00A0 and U+2009; other non-ASCII stays put
      {"x\u00a0y\u2009z", "x y z"},
      {"na\u00efve caf\u00e9.", "na\u00efve caf\u00e9 ."},
      {"end.", "end ."},
      {"1.", "1 ."},
      {"", ""},
  }));
  CAPTURE(in);
  CHECK(eval::tokenize_13a(in) == out);
}

TEST_CASE("BLEU reproduces sacreBLEU's README example", "[eval][bleu]") {
  // sacreBLEU README: two reference streams, sacrebleu defaults.
  const std::vector<std::string> sys = {"The dog bit the man.", "It wasn't surprising.",
                                        "The man had just bitten him."};
  const std::vector<std::vector<std::string>> refs = {
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};
  // Hyp lengths 6+4+7 = 17; closest refs 6, 5, 7 = 18. Matches by order: 1-grams 6+2+6 = 14/17,
  // 2-grams 5+0+2 = 7/14, 3-grams 4+0+1 = 5/11, 4-grams 3+0+0 = 3/8.
  // BP = exp(1 - 18/17) = 0.9429; BLEU = 0.9429 * (82.35*50*45.45*37.5)^(1/4) = 48.53.
  const eval::BleuScore bleu = eval::corpus_bleu(sys, refs);
  CHECK(eval::format_bleu(bleu) ==
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  CHECK(bleu.stats.correct == std::array<int64_t, 4>{14, 7, 5, 3});
  CHECK(bleu.stats.total == std::array<int64_t, 4>{17, 14, 11, 8});
  CHECK(eval::format_chrf(eval::corpus_chrf(sys, refs)) == "chrF2 = 59.73");

  // Only the first stream: refs lengths 6, 5, 6 -> 17; 1-grams 6+2+4 = 12/17,
  // 2-grams 5+0+1 = 6/14, 3-grams 4+0+0 = 4/11, 4-grams 3/8, BP 1.
  CHECK(eval::format_bleu(eval::corpus_bleu(sys, {refs[0]})) ==
        "BLEU = 45.07 70.6/42.9/36.4/37.5 (BP = 1.000 ratio = 1.000 hyp_len = 17 ref_len = 17)");
}

TEST_CASE("BLEU hand-worked cases", "[eval][bleu]") {
  SECTION("perfect match is 100") {
    const auto s = bleu1("The cat sat on the mat.", "The cat sat on the mat.");
    CHECK(s.score == Approx(100.0));
    CHECK(
        eval::format_bleu(s) ==
        "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 ref_len = 7)");
  }
  SECTION("exp smoothing of orders without matches") {
    // hyp a b c d e, ref a b x d e. 1-grams: a b d e = 4/5; 2-grams: ab de = 2/4;
    // 3-grams: 0/3 -> first zero order: 100/(2*3) = 16.67; 4-grams: 0/2 -> 100/(4*2) = 12.5.
    // BLEU = (80 * 50 * 16.667 * 12.5)^(1/4) = 833333^(1/4) = 30.21.
    const auto s = bleu1("a b c d e", "a b x d e");
    CHECK(s.precisions[2] == Approx(100.0 / 6));
    CHECK(s.precisions[3] == Approx(12.5));
    CHECK(eval::format_bleu(s) ==
          "BLEU = 30.21 80.0/50.0/16.7/12.5 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)");
  }
  SECTION("clipped counts") {
    // 7 x "the" vs "the cat is on the mat": 'the' clipped to 2 -> 2/7 = 28.57; 2-, 3-, 4-grams
    // have 6, 5, 4 n-grams and no match: 100/(2*6) = 8.33, 100/(4*5) = 5, 100/(8*4) = 3.125.
    // BLEU = (28.57 * 8.333 * 5 * 3.125)^(1/4) = 3720.2^(1/4) = 7.81; c = 7 > r = 6, BP 1.
    CHECK(eval::format_bleu(bleu1("the the the the the the the", "the cat is on the mat")) ==
          "BLEU = 7.81 28.6/8.3/5.0/3.1 (BP = 1.000 ratio = 1.167 hyp_len = 7 ref_len = 6)");
  }
  SECTION("brevity penalty") {
    // All precisions 100, c = 4, r = 8: BP = exp(1 - 8/4) = exp(-1) = 0.3679 -> 36.79.
    const auto s = bleu1("a b c d", "a b c d e f g h");
    CHECK(s.bp == Approx(std::exp(-1.0)));
    CHECK(
        eval::format_bleu(s) ==
        "BLEU = 36.79 100.0/100.0/100.0/100.0 (BP = 0.368 ratio = 0.500 hyp_len = 4 ref_len = 8)");
  }
  SECTION("an order without hypothesis n-grams gives 0") {
    // 3 tokens: no 4-grams at all, so sacrebleu stops, keeps precision 0 and log(0) wins.
    CHECK(eval::format_bleu(bleu1("a b c", "a b c d e f")) ==
          "BLEU = 0.00 100.0/100.0/100.0/0.0 (BP = 0.368 ratio = 0.500 hyp_len = 3 ref_len = 6)");
  }
  SECTION("no match at all") {
    const auto s = bleu1("x y z w", "a b c d");
    CHECK(s.score == 0.0);
    CHECK(s.precisions == std::array<double, 4>{0, 0, 0, 0});
  }
  SECTION("case-sensitive") {
    // "The" vs "the": 1-grams 3/4, 2-grams 2/3, 3-grams 1/2, 4-grams 0/1 -> 100/2 = 50.
    // BLEU = (75 * 66.67 * 50 * 50)^(1/4) = 12500000^(1/4) = 59.46.
    CHECK(eval::format_bleu(bleu1("The cat sat down", "the cat sat down")) ==
          "BLEU = 59.46 75.0/66.7/50.0/50.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)");
  }
  SECTION("empty hypothesis corpus") {
    CHECK(eval::corpus_bleu({}, {{}}).score == 0.0);
    const auto s = eval::corpus_bleu({""}, {{"a b c d"}});
    CHECK(s.score == 0.0);
    CHECK(s.bp == 0.0);
  }
}

TEST_CASE("BLEU picks the closest reference length, the shorter on a tie", "[eval][bleu]") {
  CHECK(eval::bleu_sentence_stats("a b c d e", {"a b c d e f", "a b c d"}).ref_len == 4);
  CHECK(eval::bleu_sentence_stats("a b c d e", {"a b c d e f g", "a b c"}).ref_len == 3);
  CHECK(eval::bleu_sentence_stats("a b c d e", {"a b c d e f", "a b c"}).ref_len == 6);
  CHECK(eval::bleu_sentence_stats("a b", {"a b c", "a"}).ref_len == 1);
}

TEST_CASE("corpus BLEU sums statistics before scoring", "[eval][bleu]") {
  // Sentence 1 is perfect (4 tokens), sentence 2 has no 4-gram match: the corpus score comes
  // from summed counts 1-grams 8/8, 2-grams 6/6 ... not from a mean of sentence scores.
  const auto s = eval::corpus_bleu({"a b c d", "e f g h"}, {{"a b c d", "e f g x"}});
  CHECK(s.stats.correct == std::array<int64_t, 4>{7, 5, 3, 1});
  CHECK(s.stats.total == std::array<int64_t, 4>{8, 6, 4, 2});
  // (87.5 * 83.33 * 75 * 50)^(1/4) = 27343750^(1/4) = 72.31
  CHECK(s.score == Approx(72.31).margin(0.005));
}

TEST_CASE("chrF hand-worked cases", "[eval][chrf]") {
  CHECK(chrf1("ab", "ab") == Approx(100.0));
  // Whitespace is removed before counting characters.
  CHECK(chrf1("a b c", "abc") == Approx(100.0));
  // abc vs abd: 1-grams P = R = 2/3, 2-grams 1/2, 3-grams 0 (both have one), orders 4-6 empty.
  // Effective order 3: avg P = avg R = (2/3 + 1/2 + 0)/3 = 7/18; F2 = 5PR/(4P+R) = 7/18.
  CHECK(chrf1("abc", "abd") == Approx(100.0 * 7 / 18));
  // ab vs abcd: 1-grams P = 1, R = 2/4; 2-grams P = 1, R = 1/3; 3,4-grams: no hyp n-grams, not
  // effective. avg P = 1, avg R = 5/12: F2 = 5 * (5/12) / (4 + 5/12) = 25/53.
  CHECK(chrf1("ab", "abcd") == Approx(100.0 * 25 / 53));
  CHECK(eval::format_chrf(eval::corpus_chrf({"ab"}, {{"abcd"}})) == "chrF2 = 47.17");
  // Non-ASCII counts by code point: "é" is one character.
  CHECK(chrf1("caf\u00e9", "cafe") == Approx(chrf1("cafx", "cafe")));
  SECTION("corpus statistics are summed, then one F-score") {
    // (ab, ab) + (abc, abd): 1-grams 4/5, 2-grams 2/3, 3-grams 0/1 -> avg (0.8 + 2/3)/3 = 0.4889.
    CHECK(eval::corpus_chrf({"ab", "abc"}, {{"ab", "abd"}}).score ==
          Approx(100.0 * (0.8 + 2.0 / 3) / 3));
  }
  SECTION("eps smoothing variant") {
    // Per-order F: 2/3, 1/2, then 0 and eps-sized terms for the empty orders; mean over 6.
    const auto stats = eval::chrf_sentence_stats("abc", {"abd"});
    CHECK(eval::chrf_f_score(stats, eval::ChrfAveraging::eps_smoothing) ==
          Approx(100.0 * (2.0 / 3 + 0.5) / 6));
  }
  SECTION("empty hypothesis") {
    CHECK(chrf1("", "abc") == 0.0);
    CHECK(eval::corpus_chrf({}, {{}}).score == 0.0);
  }
}

TEST_CASE("metrics reject malformed input", "[eval][bleu][chrf]") {
  CHECK_THROWS_WITH(eval::corpus_bleu({"a", "b"}, {{"a"}}),
                    Contains("2 hypothesis lines but reference 1 has 1 lines"));
  CHECK_THROWS_AS(eval::corpus_chrf({"a"}, {{"a", "b"}}), vkf::Error);
  CHECK_THROWS_AS(eval::corpus_bleu({"a"}, {}), vkf::Error);
  CHECK_THROWS_AS(eval::corpus_chrf({"a\xff"}, {{"a"}}), vkf::Error);
}

TEST_CASE("UTF-8 validation and Python whitespace", "[eval][bleu]") {
  CHECK(eval::find_invalid_utf8("caf\u00e9 \u65e5\U0001F600") == std::string_view::npos);
  CHECK(eval::find_invalid_utf8("ab\xC0\xAF") == 2);        // overlong '/'
  CHECK(eval::find_invalid_utf8("\xED\xA0\x80") == 0);      // surrogate
  CHECK(eval::find_invalid_utf8("\xF4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(eval::find_invalid_utf8("x\xE6\x97") == 1);         // truncated
  CHECK(eval::rstrip_python_whitespace("ab \t\r\u3000") == "ab");
  CHECK(eval::rstrip_python_whitespace("\u00e9\u00a0") == "\u00e9");
  const auto fields = eval::split_python_whitespace(
      "\x1c"
      "a\u2028b  c\u0085");
  CHECK(fields == std::vector<std::string_view>{"a", "b", "c"});
}

TEST_CASE("text files are read line by line like sacreBLEU", "[eval][bleu]") {
  auto read = [](const std::string& text) {
    std::istringstream in(text);
    return eval::read_text_lines(in, "test");
  };
  CHECK(read("").empty());
  CHECK(read("a\nb") == std::vector<std::string>{"a", "b"});
  CHECK(read("a\nb\n") == std::vector<std::string>{"a", "b"});
  CHECK(read("\n\n") == std::vector<std::string>{"", ""});
  CHECK(read("a\r\n") == std::vector<std::string>{"a\r"});  // rstrip happens in the metric
  CHECK_THROWS_WITH(read("ok\nbad \xff\n"), Contains("test:2: invalid UTF-8"));
  CHECK_THROWS_WITH(eval::read_text_file("/nonexistent/vkf-bleu-hyp.txt"),
                    Contains("cannot open /nonexistent/vkf-bleu-hyp.txt"));
}
